// Package e2e holds the end-to-end tests: they build the real continuo
// binary, run it as a separate process on a real data directory, and talk
// to it through the official MCP Go SDK client over HTTP and stdio.
package e2e
