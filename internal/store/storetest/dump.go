package storetest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// dumpTests checks export and import: they need two stores each.
func dumpTests(t *testing.T, f Factory) {
	const schema = 7 // any number: both sides must agree
	export := func(t *testing.T, s store.Store) (string, int) {
		t.Helper()
		var b bytes.Buffer
		n, err := store.Export(t.Context(), s, schema, &b)
		if err != nil {
			t.Fatalf("Export: %v", err)
		}
		return b.String(), n
	}
	filled := func(t *testing.T) store.Store {
		t.Helper()
		s := f(t)
		fx := Setup(t, s, "alpha")
		Token(t, s, fx.Principal.ID, "hash-1", continuo.ScopeSessionsRead)
		Message(t, s, fx.Session.ID, 1, continuo.KindDecision)
		Message(t, s, fx.Session.ID, 2, continuo.KindTodo, func(m *continuo.Message) {
			at := Base.Add(1000)
			m.Status, m.Resolution, m.ResolvedAt, m.Tags = continuo.StatusResolved, "done", &at, []string{"a", "b"}
		})
		MustWrite(t, s, func(tx store.Tx) error {
			if err := tx.MetaSet(t.Context(), "k", "v"); err != nil {
				return err
			}
			if err := tx.InstructionAppend(t.Context(), store.Instruction{SessionID: fx.Session.ID, Seq: 2, Text: "next", CreatedAt: Base}); err != nil {
				return err
			}
			return tx.IdempotencyCreate(t.Context(), store.Idempotency{Scope: "s", KeyHash: "k", RequestHash: "r", ResultID: "msg", CreatedAt: Base})
		})
		return s
	}

	t.Run("RoundTrip", func(t *testing.T) {
		a := filled(t)
		out, n := export(t, a)
		if n < 9 {
			t.Fatalf("exported %d rows", n)
		}
		b := f(t)
		m, err := store.Import(t.Context(), b, schema, strings.NewReader(out))
		if err != nil || m != n {
			t.Fatalf("Import: %d rows, %v (exported %d)", m, err, n)
		}
		if again, _ := export(t, b); again != out {
			t.Fatalf("export of the import differs:\n%s\n---\n%s", out, again)
		}
		// Counters travel too: the next session reference continues.
		var ga, gb int64
		MustWrite(t, a, func(tx store.Tx) (err error) {
			g, err := tx.GroupGetByName(t.Context(), "alpha")
			if err == nil {
				ga, err = tx.SessionRefNext(t.Context(), g.ID)
			}
			return err
		})
		MustWrite(t, b, func(tx store.Tx) (err error) {
			g, err := tx.GroupGetByName(t.Context(), "alpha")
			if err == nil {
				gb, err = tx.SessionRefNext(t.Context(), g.ID)
			}
			return err
		})
		if ga != gb || ga < 2 {
			t.Fatalf("next session ref: source %d, imported %d", ga, gb)
		}
	})

	t.Run("RefusesNonEmpty", func(t *testing.T) {
		a := filled(t)
		out, _ := export(t, a)
		before, _ := export(t, a)
		if _, err := store.Import(t.Context(), a, schema, strings.NewReader(out)); !errors.Is(err, store.ErrNotEmpty) {
			t.Fatalf("import into a full store: %v", err)
		}
		if after, _ := export(t, a); after != before {
			t.Fatal("a refused import changed the store")
		}
	})

	t.Run("RejectsBadFiles", func(t *testing.T) {
		out, _ := export(t, filled(t))
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		bad := map[string]string{
			"truncated":   strings.Join(lines[:len(lines)-1], "\n"),
			"no header":   strings.Join(lines[1:], "\n"),
			"schema":      strings.Replace(out, `"schema_version":7`, `"schema_version":8`, 1),
			"count":       strings.Replace(out, `"end":true,"rows":`, `"end":true,"rows":1`, 1),
			"column":      strings.Replace(out, `"name":"alpha"`, `"name; DROP TABLE groups":"alpha"`, 1),
			"table":       strings.Replace(out, `"table":"messages"`, `"table":"sqlite_master"`, 1),
			"order":       strings.Join(append([]string{lines[0]}, append([]string{lines[len(lines)-2]}, lines[1:]...)...), "\n"),
			"float value": strings.Replace(out, `"ref":1`, `"ref":1.5`, 1),
		}
		for name, text := range bad {
			s := f(t)
			if _, err := store.Import(t.Context(), s, schema, strings.NewReader(text)); err == nil {
				t.Errorf("%s: import succeeded", name)
			}
			if after, n := export(t, s); n != 0 {
				t.Errorf("%s: a failed import left %d rows:\n%s", name, n, after)
			}
		}
	})
}
