//go:build race

package redact

// raceEnabled: the race detector slows String tenfold; the randomized tests
// then try fewer texts.
const raceEnabled = true
