// Package continuo holds Continuo's domain types: typed IDs, states, scopes and
// the closed set of error codes of the tool contract (CONTRACT.md §9). It
// imports only the standard library; every other package builds on it.
package continuo
