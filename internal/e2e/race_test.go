//go:build race

package e2e

// Under -race, the server processes the tests start are race-instrumented too.
func init() { buildFlags = append(buildFlags, "-race") }
