package redact

import (
	"slices"
	"strconv"
	"strings"
)

// Strings redacts every element of ss (a message's tags, say) and reports
// whether any changed. ss itself is never modified: it is returned as it is
// when nothing changed, and a copy otherwise.
func Strings(ss []string) ([]string, bool) {
	var out []string
	for i, s := range ss {
		r, changed := String(s)
		if !changed {
			continue
		}
		if out == nil {
			out = slices.Clone(ss)
		}
		out[i] = r
	}
	if out == nil {
		return ss, false
	}
	return out, true
}

// Value redacts the strings in a JSON-like value, such as an error's
// details: a string, []string, []any, map[string]any or map[string]string,
// recursively, map keys included. Anything else (numbers, booleans, nil,
// other types) is returned as it is, so callers should put only JSON-like
// values where Value is meant to look. v is never modified: when something
// changed, the containers on the way to it are copied, and the rest is
// shared.
//
// A string under a key that names a secret ({"api_key": "x"}) is replaced
// whole, as String replaces the value of "api_key": "x" in text; an empty,
// boolean or null-like value stays, as there.
//
// Two keys of one map that redact to the same string are both kept, so that
// no value is lost: keys that did not change keep their names, and the
// others, in the order of their original keys (so the result does not depend
// on map iteration), take the first of "[redacted]", "[redacted] (2)",
// "[redacted] (3)"... that is free.
func Value(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		return String(x)
	case []string:
		return Strings(x)
	case []any:
		var out []any
		for i, e := range x {
			r, changed := Value(e)
			if !changed {
				continue
			}
			if out == nil {
				out = slices.Clone(x)
			}
			out[i] = r
		}
		if out == nil {
			return x, false
		}
		return out, true
	case map[string]any:
		return redactMap(x, func(k string, v any) (any, bool) {
			if s, ok := v.(string); ok && keyedSecret(k, s) {
				return Placeholder, true
			}
			return Value(v)
		})
	case map[string]string:
		return redactMap(x, func(k, v string) (string, bool) {
			if keyedSecret(k, v) {
				return Placeholder, true
			}
			return String(v)
		})
	}
	return v, false
}

// keyedSecret reports whether value, stored under the name key, is a secret
// by its name, as the assignment rule decides for a quoted value.
func keyedSecret(key, value string) bool {
	switch {
	case value == "" || value == Placeholder || isNullish(value) || !secretName(key):
		return false
	case (strings.EqualFold(key, "pwd") || strings.EqualFold(key, "oldpwd")) && strings.HasPrefix(value, "/"):
		return false // the shell's working directory
	}
	return true
}

// redactMap redacts the keys of m, and its values with value(key, value);
// see Value.
func redactMap[V any](m map[string]V, value func(string, V) (V, bool)) (map[string]V, bool) {
	type renamed struct {
		key, newKey string
		val         V
	}
	var moved []renamed       // entries whose key changed
	var revalued map[string]V // entries whose value alone changed
	for k, v := range m {
		nk, kc := String(k)
		nv, vc := value(k, v)
		switch {
		case kc:
			moved = append(moved, renamed{k, nk, nv})
		case vc:
			if revalued == nil {
				revalued = map[string]V{}
			}
			revalued[k] = nv
		}
	}
	if moved == nil && revalued == nil {
		return m, false
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	for k, v := range revalued {
		out[k] = v
	}
	for _, e := range moved {
		delete(out, e.key)
	}
	slices.SortFunc(moved, func(a, b renamed) int { return strings.Compare(a.key, b.key) })
	for _, e := range moved {
		k := e.newKey
		for n := 2; ; n++ {
			if _, taken := out[k]; !taken {
				break
			}
			k = e.newKey + " (" + strconv.Itoa(n) + ")"
		}
		out[k] = e.val
	}
	return out, true
}
