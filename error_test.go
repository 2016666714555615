package continuo

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// contractCodes is the closed set of CONTRACT.md §9, in the contract's order.
var contractCodes = []Code{"invalid_input", "unauthorized", "forbidden", "not_found", "conflict", "revision_conflict",
	"too_large", "session_closed", "goal_terminal", "goal_plan_incomplete", "provider_unavailable",
	"queue_full", "capacity_full", "carrier_fenced", "unsafe_boundary", "ticket_invalid",
	"terminal_immutable", "reconcile_required", "invalid_state", "rate_limited", "internal"}

var contractRetries = []Retry{"none", "fix_input", "wait", "reobserve", "reconcile", "retry_same"}

func TestErrorShape(t *testing.T) {
	got := Codes()
	slices.Sort(got)
	want := slices.Clone(contractCodes)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Codes() = %v\nwant the contract's %v", got, want)
	}
	for _, c := range Codes() {
		if _, ok := retryFor[c]; !ok || !slices.Contains(contractRetries, RetryFor(c)) {
			t.Errorf("code %s: no contract retry value (%q)", c, RetryFor(c))
		}
		e := Errorf(c, "m").With("k", 1)
		if AsError(e).Code != c || ErrorCode(e) != c || e.Details["k"] != 1 {
			t.Errorf("code %s does not survive AsError/ErrorCode", c)
		}
	}
}

// declaredConsts returns, for each named type, the string values of the
// constants of that type declared in this package's non-test files, in
// declaration order: the source the ordered lists must follow.
func declaredConsts(t *testing.T) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string][]string{}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				typ, ok := vs.Type.(*ast.Ident)
				if !ok {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[typ.Name] = append(out[typ.Name], s)
				}
			}
		}
	}
	return out
}

func strs[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// TestCodesOrder pins Codes() to the contract: no duplicates, exactly the
// codes of the const block in its order (which is CONTRACT.md §9's), and
// exactly the codes of the retry table.
func TestCodesOrder(t *testing.T) {
	got := Codes()
	seen := map[Code]bool{}
	for _, c := range got {
		if seen[c] {
			t.Errorf("Codes() lists %s twice", c)
		}
		seen[c] = true
	}
	if !slices.Equal(got, contractCodes) {
		t.Errorf("Codes() = %v\nwant the contract's order %v", got, contractCodes)
	}
	if decl := declaredConsts(t)["Code"]; !slices.Equal(strs(got), decl) {
		t.Errorf("Codes() = %v\nwant the const block's order %v", got, decl)
	}
	if len(retryFor) != len(got) {
		t.Errorf("the retry table has %d codes, Codes() %d", len(retryFor), len(got))
	}
	for c := range retryFor {
		if !seen[c] {
			t.Errorf("the retry table has %s, Codes() does not", c)
		}
	}
	got[0] = "mutated"
	if Codes()[0] != CodeInvalidInput {
		t.Error("Codes() returns its backing array: a caller can change the set")
	}
	if !CodeInternal.Valid() || Code("no_such_code").Valid() || Code("").Valid() {
		t.Error("Code.Valid")
	}
}

// checkSet checks one closed set: its list is exactly the constants of its
// type in declaration order, without duplicates; Valid accepts each and
// nothing else; and the list is a copy.
func checkSet[T ~string](t *testing.T, typ, fn string, list func() []T, valid func(T) bool) {
	t.Helper()
	got := list()
	if decl := declaredConsts(t)[typ]; len(decl) == 0 || !slices.Equal(strs(got), decl) {
		t.Errorf("%s() = %v, want the declared %s constants in order: %v", fn, got, typ, decl)
	}
	for i, v := range got {
		if slices.Index(got, v) != i {
			t.Errorf("%s() lists %q twice", fn, v)
		}
		if !valid(v) {
			t.Errorf("%s(%q).Valid() = false", typ, v)
		}
	}
	for _, bad := range []T{"", "bogus", T(strings.ToUpper(string(got[0]))), got[0] + " "} {
		if valid(bad) {
			t.Errorf("%s(%q).Valid() = true", typ, bad)
		}
	}
	got[0] = "mutated"
	if list()[0] == "mutated" {
		t.Errorf("%s() returns its backing array", fn)
	}
}

func TestClosedSets(t *testing.T) {
	// Every declared Kind is listable; the postable ones are Kinds, which
	// is ListKinds without the read-only instruction.
	checkSet(t, "Kind", "ListKinds", ListKinds, Kind.Listable)
	if l := ListKinds(); !slices.Equal(Kinds(), l[:len(l)-1]) || l[len(l)-1] != KindInstruction || KindInstruction.Valid() {
		t.Errorf("Kinds() = %v, ListKinds() = %v: want ListKinds = Kinds + instruction, and instruction not postable", Kinds(), l)
	}
	checkSet(t, "Status", "Statuses", Statuses, Status.Valid)
	checkSet(t, "Priority", "Priorities", Priorities, Priority.Valid)
	checkSet(t, "Mode", "Modes", Modes, Mode.Valid)
	checkSet(t, "Lifecycle", "Lifecycles", Lifecycles, Lifecycle.Valid)
	checkSet(t, "Access", "Accesses", Accesses, Access.Valid)
	checkSet(t, "StepStatus", "StepStatuses", StepStatuses, StepStatus.Valid)
	checkSet(t, "GoalLifecycle", "GoalLifecycles", GoalLifecycles, GoalLifecycle.Valid)
	for _, l := range GoalLifecycles() {
		if l.Terminal() != (l != GoalActive) {
			t.Errorf("GoalLifecycle(%q).Terminal() = %v", l, l.Terminal())
		}
	}
	checkSet(t, "Code", "Codes", Codes, Code.Valid)
}

func TestRetryCoversEveryCode(t *testing.T) {
	for _, c := range Codes() {
		r, ok := retryFor[c]
		if !ok {
			t.Errorf("code %s has no retry advice", c)
			continue
		}
		if RetryFor(c) != r {
			t.Errorf("RetryFor(%s) = %s, want %s", c, RetryFor(c), r)
		}
		if !slices.Contains(contractRetries, r) {
			t.Errorf("RetryFor(%s) = %q, not a contract retry value", c, r)
		}
	}
	// Spot checks of advice a client depends on.
	for c, want := range map[Code]Retry{CodeInvalidInput: RetryFixInput, CodeTooLarge: RetryFixInput,
		CodeForbidden: RetryNone, CodeRevisionConflict: RetryReobserve, CodeInternal: RetrySame,
		CodeReconcileRequired: RetryReconcile} {
		if got := RetryFor(c); got != want {
			t.Errorf("RetryFor(%s) = %s, want %s", c, got, want)
		}
	}
	if got := RetryFor("no_such_code"); got != RetryNone {
		t.Errorf("RetryFor(unknown) = %s, want none", got)
	}
}

func TestErrorHelpers(t *testing.T) {
	e := Invalid("text", "must be %d..%d bytes", 1, 8000)
	if e.Code != CodeInvalidInput || e.Details["field"] != "text" || !strings.HasPrefix(e.Message, "text: ") {
		t.Fatalf("Invalid = %+v", e)
	}
	e2 := e.With("limit", 8000)
	if e2.Details["limit"] != 8000 || e2.Details["field"] != "text" {
		t.Fatalf("With = %+v", e2)
	}
	if _, ok := e.Details["limit"]; ok {
		t.Fatal("With mutated the receiver's details")
	}
	wrapped := fmt.Errorf("post: %w", e2)
	if ErrorCode(wrapped) != CodeInvalidInput || AsError(wrapped) != e2 {
		t.Fatalf("ErrorCode/AsError through a wrap: %v %v", ErrorCode(wrapped), AsError(wrapped))
	}
	plain := errors.New("open /secret/path: driver says sk-1234")
	if ErrorCode(plain) != CodeInternal {
		t.Fatalf("ErrorCode(plain) = %s", ErrorCode(plain))
	}
	if a := AsError(plain); a.Code != CodeInternal || strings.Contains(a.Message, "secret") || strings.Contains(a.Message, "sk-") {
		t.Fatalf("AsError(plain) leaks the cause: %+v", a)
	}
	if nf := NotFound("session", "~s1"); nf.Code != CodeNotFound {
		t.Fatalf("NotFound = %+v", nf)
	}
	if got := Invalid("x", "bad").Error(); got != "invalid_input: x: bad" {
		t.Fatalf("Error() = %q", got)
	}
}

func TestNewIDShape(t *testing.T) {
	now := time.Now()
	for _, p := range []string{PrefixProject, PrefixSession, PrefixMessage, PrefixGoal, PrefixGroup, PrefixPrincipal, PrefixToken} {
		id := NewID(p, now)
		if !strings.HasPrefix(id, p) || len(id) != len(p)+26 {
			t.Fatalf("NewID(%q) = %q: want the prefix and 26 characters", p, id)
		}
		if !ValidID(p, id) {
			t.Fatalf("ValidID(%q, %q) = false", p, id)
		}
		other := PrefixSession
		if p == PrefixSession {
			other = PrefixMessage
		}
		if ValidID(other, id) {
			t.Fatalf("ValidID(%q, %q) = true for the wrong prefix", other, id)
		}
	}
}

func TestNewIDSortable(t *testing.T) {
	check := func(t *testing.T, ids []string) {
		t.Helper()
		for i := 1; i < len(ids); i++ {
			if ids[i-1] >= ids[i] {
				t.Fatalf("IDs not strictly increasing at %d: %s >= %s", i, ids[i-1], ids[i])
			}
		}
	}
	t.Run("same millisecond", func(t *testing.T) {
		now := time.Now().Add(time.Hour) // a millisecond no other test used
		ids := make([]string, 1000)
		for i := range ids {
			ids[i] = NewID(PrefixMessage, now)
		}
		check(t, ids)
	})
	t.Run("advancing clock", func(t *testing.T) {
		base := time.Now().Add(2 * time.Hour)
		ids := make([]string, 1000)
		for i := range ids {
			ids[i] = NewID(PrefixMessage, base.Add(time.Duration(i/7)*time.Millisecond))
		}
		check(t, ids)
	})
	t.Run("clock steps back", func(t *testing.T) {
		base := time.Now().Add(3 * time.Hour)
		a := NewID(PrefixSession, base)
		b := NewID(PrefixSession, base.Add(-time.Minute))
		c := NewID(PrefixSession, base.Add(-time.Hour))
		check(t, []string{a, b, c})
	})
	t.Run("real clock", func(t *testing.T) {
		ids := make([]string, 1000)
		for i := range ids {
			ids[i] = NewID(PrefixSession, time.Now())
		}
		// A later real time sorts after an earlier one.
		check(t, ids)
	})
}

func TestNewIDTimeOrder(t *testing.T) {
	// IDs from clearly different milliseconds sort by time, whatever their
	// random parts: the timestamp is the most significant part.
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	a := NewID(PrefixGroup, t0)
	later := NewID(PrefixGroup, t0.Add(24*time.Hour))
	if a >= later {
		t.Fatalf("%s >= %s", a, later)
	}
}

func TestValidIDRejects(t *testing.T) {
	good := NewID(PrefixSession, time.Now())
	body := good[len(PrefixSession):]
	cases := map[string]string{
		"empty":             "",
		"prefix only":       PrefixSession,
		"wrong prefix":      PrefixMessage + body,
		"no prefix":         body,
		"short":             good[:len(good)-1],
		"long":              good + "0",
		"lower case":        PrefixSession + strings.ToLower(body),
		"excluded letter I": PrefixSession + "0" + strings.Repeat("I", 25),
		"excluded letter L": PrefixSession + "0" + strings.Repeat("L", 25),
		"excluded letter O": PrefixSession + "0" + strings.Repeat("O", 25),
		"excluded letter U": PrefixSession + "0" + strings.Repeat("U", 25),
		"punctuation":       PrefixSession + "0" + strings.Repeat("-", 25),
		"first char > 7":    PrefixSession + "8" + body[1:],
		"multibyte":         PrefixSession + "é" + body[2:],
		"ref form":          "~s1",
	}
	for name, s := range cases {
		if ValidID(PrefixSession, s) {
			t.Errorf("%s: ValidID(%q) = true", name, s)
		}
	}
	if !ValidID(PrefixSession, PrefixSession+"7"+strings.Repeat("Z", 25)) {
		t.Error("the largest ID is rejected")
	}
	if !ValidID(PrefixSession, PrefixSession+strings.Repeat("0", 26)) {
		t.Error("the smallest ID is rejected")
	}
}

func TestParseScopes(t *testing.T) {
	ok := []struct {
		in   string
		want []Scope
	}{
		{"sessions:read", []Scope{ScopeSessionsRead}},
		{"sessions:write,sessions:read", []Scope{ScopeSessionsRead, ScopeSessionsWrite}},
		{"sessions:write sessions:read", []Scope{ScopeSessionsRead, ScopeSessionsWrite}},
		{" sessions:read,,sessions:read , admin ", []Scope{ScopeAdmin, ScopeSessionsRead}},
		{"swarm:work,swarm:own,project:write,coding_agent:run,runtime:read",
			[]Scope{ScopeCodingAgent, ScopeProjectWrite, ScopeRuntimeRead, ScopeSwarmOwn, ScopeSwarmWork}},
	}
	for _, c := range ok {
		got, err := ParseScopes(c.in)
		if err != nil {
			t.Errorf("ParseScopes(%q): %v", c.in, err)
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("ParseScopes(%q) = %v, want %v", c.in, got, c.want)
		}
	}
	all := make([]string, 0, len(AllScopes()))
	for _, s := range AllScopes() {
		all = append(all, string(s))
	}
	if got, err := ParseScopes(strings.Join(all, ",")); err != nil || len(got) != len(AllScopes()) {
		t.Errorf("ParseScopes(all) = %v, %v", got, err)
	}
	for _, in := range []string{"", " ", ",", "sessions:raed", "sessions:read,bogus", "Sessions:Read", "sessions:*", "admin;"} {
		got, err := ParseScopes(in)
		if err == nil {
			t.Errorf("ParseScopes(%q) = %v, want an error", in, got)
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidInput || e.Details["field"] != "scopes" {
			t.Errorf("ParseScopes(%q) error = %#v, want invalid_input on field scopes", in, err)
		}
	}
}

func TestCallerScopes(t *testing.T) {
	c := &Caller{Scopes: []Scope{ScopeSessionsRead}}
	if !c.Has(ScopeSessionsRead) || c.Has(ScopeSessionsWrite) {
		t.Fatal("Has")
	}
	err := c.Require(ScopeSessionsWrite)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeForbidden || e.Details["scope"] != "sessions:write" {
		t.Fatalf("Require = %#v", err)
	}
	admin := &Caller{Scopes: []Scope{ScopeAdmin}}
	for _, s := range AllScopes() {
		if admin.Require(s) != nil {
			t.Fatalf("admin lacks %s", s)
		}
	}
}
