// Package reggen generates text based on regex definitions
// This is a slightly altered version of https://github.com/lucasjones/reggen
package secrets

import (
	"github.com/lucasjones/reggen"
)

var seed int64 = 0x5eed

func NewSecret(regex string) string {
	g, err := reggen.NewGenerator(regex)
	if err != nil {
		panic(err)
	}
	seed++
	g.SetSeed(seed) // deterministic samples (overlay for internal/redact/testdata/gitleaks-samples)
	return g.Generate(1)
}
