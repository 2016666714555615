package continuo

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"go test ./...", []string{"go", "test", "./..."}},
		{"  go\ttest  ", []string{"go", "test"}},
		{`echo 'a b' "c d" e\ f`, []string{"echo", "a b", "c d", "e f"}},
		{`printf '%s|$x' "q\"\$\\" ''`, []string{"printf", "%s|$x", `q"$\`, ""}},
		{`a"b"'c'd`, []string{"abcd"}},
		{`"\n"`, []string{`\n`}},
		{"make -j4 lint=1", []string{"make", "-j4", "lint=1"}},
	} {
		got, err := SplitCommand(tc.line)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
	for _, line := range []string{"", "   ", "go test | tee x", "a && b", "a; b", "a > f", "echo $HOME", "echo `id`",
		"ls *.go", "a # c", "~/bin/x", "x {a,b}", "(a)", "a\nb", `"unterminated`, `'unterminated`, `trailing\`, `"$HOME"`, "\"`id`\""} {
		if got, err := SplitCommand(line); err == nil {
			t.Errorf("SplitCommand(%q) = %q, want an error", line, got)
		}
	}
}

func TestCheckValidate(t *testing.T) {
	ok := Check{Command: []string{"go", "test", "./..."}, TimeoutSecs: 600, Env: []string{"GOFLAGS", "_X1"}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]Check{
		"empty":       {},
		"empty argv0": {Command: []string{""}},
		"nul":         {Command: []string{"a\x00b"}},
		"words":       {Command: slices.Repeat([]string{"x"}, MaxCheckArgs+1)},
		"bytes":       {Command: []string{strings.Repeat("x", MaxCheckCommand)}},
		"timeout":     {Command: []string{"x"}, TimeoutSecs: int(MaxCheckTimeout.Seconds()) + 1},
		"negative":    {Command: []string{"x"}, TimeoutSecs: -1},
		"env name":    {Command: []string{"x"}, Env: []string{"A=B"}},
		"env digit":   {Command: []string{"x"}, Env: []string{"1A"}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate(%+v) = nil, want an error", name, c)
		}
	}
}

func TestCheckUnmarshal(t *testing.T) {
	var m map[string]Check
	if err := json.Unmarshal([]byte(`{"a":"go test ./...","b":{"command":["x","y"],"timeout_secs":5,"env":["E"]},"c":"a | b"}`), &m); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m["a"].Command, []string{"go", "test", "./..."}) || m["b"].TimeoutSecs != 5 || m["b"].Env[0] != "E" ||
		!slices.Equal(m["b"].Command, []string{"x", "y"}) {
		t.Errorf("decoded %+v", m)
	}
	if m["c"].Validate() == nil {
		t.Errorf("a stored line with shell syntax decoded to a runnable check: %+v", m["c"])
	}
	b, _ := json.Marshal(m["b"])
	var back Check
	if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back.Command, m["b"].Command) || back.TimeoutSecs != 5 {
		t.Errorf("round trip %s → %+v, %v", b, back, err)
	}
}
