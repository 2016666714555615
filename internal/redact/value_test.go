package redact

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestStrings(t *testing.T) {
	if got, changed := Strings(nil); got != nil || changed {
		t.Fatalf("Strings(nil) = %v, %v", got, changed)
	}
	plain := []string{"bug", "auth", "needs-review"}
	if got, changed := Strings(plain); changed || &got[0] != &plain[0] {
		t.Fatalf("unchanged tags: %v, %v, same slice %v", got, changed, &got[0] == &plain[0])
	}
	tags := []string{"deploy", "key=" + githubPAT, continuoPAT}
	orig := append([]string(nil), tags...)
	got, changed := Strings(tags)
	if !changed || !reflect.DeepEqual(got, []string{"deploy", "key=[redacted]", "[redacted]"}) {
		t.Fatalf("Strings = %q, %v", got, changed)
	}
	if !reflect.DeepEqual(tags, orig) {
		t.Fatalf("input modified: %q", tags)
	}
}

func TestValue(t *testing.T) {
	type opaque struct{ S string }
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"nil", nil, nil},
		{"number", 42, 42},
		{"float", 1.5, 1.5},
		{"bool", true, true},
		{"other types pass", opaque{githubPAT}, opaque{githubPAT}},
		{"string", "token " + githubPAT, "token [redacted]"},
		{"strings", []string{"a", openAIKey}, []string{"a", "[redacted]"}},
		{"any slice", []any{1, "x", openAIKey, []any{"password=x"}}, []any{1, "x", "[redacted]", []any{"password=[redacted]"}}},
		{"map values and keys", map[string]any{
			"field": "api_key",
			"got":   "API_KEY=abc",
			"list":  []any{map[string]any{"url": "postgres://u:pw@db/x"}},
			jwt:     "the key itself was a key",
			"n":     3,
		}, map[string]any{
			"field":      "api_key",
			"got":        "API_KEY=[redacted]",
			"list":       []any{map[string]any{"url": "postgres://u:[redacted]@db/x"}},
			"[redacted]": "the key itself was a key",
			"n":          3,
		}},
		{"string map", map[string]string{"header": "Authorization: Bearer " + openAIKey}, map[string]string{"header": "Authorization: Bearer [redacted]"}},
		// Values under secret names go whole, as "api_key": "x" does in text.
		{"secret-named keys", map[string]any{
			"api_key": "x", "DB_PASSWORD": "p w", "password": "", "token": "null", "auth_enabled": "yes",
			"token_type": "Bearer", "primary_key": "id", "PWD": "/home/a", "client_secret": 7,
			"credentials": map[string]any{"user": "bob"},
		}, map[string]any{
			"api_key": "[redacted]", "DB_PASSWORD": "[redacted]", "password": "", "token": "null", "auth_enabled": "yes",
			"token_type": "Bearer", "primary_key": "id", "PWD": "/home/a", "client_secret": 7,
			"credentials": map[string]any{"user": "bob"},
		}},
		{"secret-named string map", map[string]string{"secret": "s", "name": "n"}, map[string]string{"secret": "[redacted]", "name": "n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := Value(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Value(%v)\n got %#v\nwant %#v", tc.in, got, tc.want)
			}
			if changed != !reflect.DeepEqual(tc.in, tc.want) {
				t.Errorf("changed = %v", changed)
			}
			if again, ch := Value(got); ch || !reflect.DeepEqual(again, got) {
				t.Errorf("not idempotent: %#v then %#v", got, again)
			}
		})
	}
}

// TestValueKeepsInput: the caller's value is never modified, and an
// unchanged container is returned as it is, not copied.
func TestValueKeepsInput(t *testing.T) {
	inner := map[string]any{"ok": "fine"}
	in := map[string]any{"a": []any{"x", "password: hunter2"}, "b": inner, openAIKey: "v"}
	before, _ := json.Marshal(in)
	out, changed := Value(in)
	if !changed {
		t.Fatal("not changed")
	}
	if after, _ := json.Marshal(in); string(after) != string(before) {
		t.Fatalf("input modified:\n%s\n%s", before, after)
	}
	m := out.(map[string]any)
	if reflect.ValueOf(m["b"]).Pointer() != reflect.ValueOf(inner).Pointer() {
		t.Error("an unchanged nested map was copied")
	}
	if o, ch := Value(inner); ch || reflect.ValueOf(o).Pointer() != reflect.ValueOf(inner).Pointer() {
		t.Error("an unchanged map was copied")
	}
}

// TestValueKeyCollisions: keys that redact to the same string keep their
// values, under names that depend on the keys alone, not on map order.
func TestValueKeyCollisions(t *testing.T) {
	k1, k2 := "sk-"+strings.Repeat("A1", 10), "sk-"+strings.Repeat("B2", 10)
	in := map[string]any{k2: "second", k1: "first", "[redacted]": "literal", "plain": 1}
	want := map[string]any{"[redacted]": "literal", "[redacted] (2)": "first", "[redacted] (3)": "second", "plain": 1}
	for range 50 { // map iteration order varies between runs of the loop
		got, changed := Value(in)
		if !changed || !reflect.DeepEqual(got, want) {
			t.Fatalf("Value = %#v, %v\nwant %#v", got, changed, want)
		}
	}
}

// TestValueJSON: details decoded from JSON come back as valid JSON.
func TestValueJSON(t *testing.T) {
	var v any
	src := `{"error":"bad token ` + githubPAT + `","args":{"api_key":"x","tags":["a","` + continuoPAT + `"]},"n":[1,2.5,true,null]}`
	if err := json.Unmarshal([]byte(src), &v); err != nil {
		t.Fatal(err)
	}
	out, changed := Value(v)
	b, err := json.Marshal(out)
	if err != nil || !changed {
		t.Fatalf("%v %v", err, changed)
	}
	want := `{"args":{"api_key":"[redacted]","tags":["a","[redacted]"]},"error":"bad token [redacted]","n":[1,2.5,true,null]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}
