package layering_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// stateConst names a constant of a state type with a transition table
// (or of the attempt states): TaskQueued, RunRunning, CarrierLost, …
var stateConst = regexp.MustCompile(`^(Task|Run|Continuation|Worker|Carrier|Attempt)[A-Z]\w*$`)

// stateType names such a state type.
var stateType = regexp.MustCompile(`^(Task|Run|Continuation|Worker|Carrier|Attempt)State$`)

const modulePath = "github.com/continuo-dev/continuo"

// TestStatesMoveInTheStore fails on non-test code outside internal/store
// that assigns a task, run, continuation, worker, carrier or attempt
// state to a field (x.State = continuo.TaskFailed, w.CarrierState = to):
// a state changes only through the store's Move methods, one guarded
// statement each, so that one place, the transition tables, decides every
// transition. Creating a row with its first state (a composite literal)
// is no transition and is not looked at. It reads syntax only: a value is
// a state when it is such a constant, a conversion to such a type, or a
// variable or parameter declared with such a type or from such a value.
func TestStatesMoveInTheStore(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") ||
				rel == "internal/store" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, pos := range stateAssignments(f) {
			t.Errorf("%s: assigns a state field; move the state through the store (TaskMove, RunMove, …) instead", fset.Position(pos))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The detector itself, on code it must flag and code it must let be.
func TestStateAssignments(t *testing.T) {
	for _, c := range []struct {
		src  string
		want int
	}{
		{`t.State = continuo.TaskFailed`, 1},
		{`t.State, t.Reason = continuo.TaskQueued, ""`, 1},
		{`w.CarrierState = continuo.CarrierLost`, 1},
		{`a.State = continuo.AttemptInDoubt`, 1},
		{`r.State = to`, 1},                                          // to is a parameter of type continuo.RunState
		{`st := continuo.RunFailed; r.State = st`, 1},                // st is declared from a state
		{`r.State = continuo.RunState("failed")`, 1},                 // a conversion
		{`var s continuo.TaskState; t.State = s`, 1},                 // declared with the type
		{`sw.State = continuo.SwarmClosed`, 0},                       // swarms have no transition table
		{`ws.State = p`, 0},                                          // not a state
		{`k := continuo.Task{State: continuo.TaskQueued}; _ = k`, 0}, // a row's first state
		{`r.Kind = continuo.RunAgent`, 0},
	} {
		src := "package x\nimport \"" + modulePath + "\"\nfunc f(t, w, a, r, sw, ws any, to continuo.RunState, p int) {\n" + c.src + "\n}\n"
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if got := len(stateAssignments(f)); got != c.want {
			t.Errorf("%s: %d assignments of a state found, want %d", c.src, got, c.want)
		}
	}
}

// stateAssignments returns where f assigns a state to a State or
// CarrierState field.
func stateAssignments(f *ast.File) []token.Pos {
	local := "" // how f names the root package; "" inside it
	if f.Name.Name != "continuo" {
		local = "\x00" // not imported: no selector names it
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == modulePath {
				local = "continuo"
				if im.Name != nil {
					local = im.Name.Name
				}
			}
		}
	}
	var out []token.Pos
	ast.Inspect(f, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || as.Tok != token.ASSIGN || len(as.Lhs) != len(as.Rhs) {
			return true
		}
		for i, lhs := range as.Lhs {
			if sel, ok := lhs.(*ast.SelectorExpr); ok && (sel.Sel.Name == "State" || sel.Sel.Name == "CarrierState") &&
				isState(local, as.Rhs[i], 0) {
				out = append(out, lhs.Pos())
			}
		}
		return true
	})
	return out
}

// isState reports whether e is a state value, as the test's comment says.
func isState(local string, e ast.Expr, depth int) bool {
	if depth > 4 {
		return false
	}
	switch e := e.(type) {
	case *ast.ParenExpr:
		return isState(local, e.X, depth+1)
	case *ast.SelectorExpr:
		return names(local, e, stateConst)
	case *ast.CallExpr: // a conversion, continuo.TaskState(s)
		return len(e.Args) == 1 && isStateType(local, e.Fun)
	case *ast.Ident:
		if local == "" && stateConst.MatchString(e.Name) {
			return true
		}
		if e.Obj == nil {
			return false
		}
		switch d := e.Obj.Decl.(type) {
		case *ast.Field:
			return isStateType(local, d.Type)
		case *ast.ValueSpec:
			if d.Type != nil {
				return isStateType(local, d.Type)
			}
			for i, n := range d.Names {
				if n.Name == e.Name && i < len(d.Values) {
					return isState(local, d.Values[i], depth+1)
				}
			}
		case *ast.AssignStmt:
			if len(d.Lhs) != len(d.Rhs) {
				return false
			}
			for i, l := range d.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name == e.Name {
					return isState(local, d.Rhs[i], depth+1)
				}
			}
		}
	}
	return false
}

// isStateType reports whether e names one of the state types.
func isStateType(local string, e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.SelectorExpr:
		return names(local, e, stateType)
	case *ast.Ident:
		return local == "" && stateType.MatchString(e.Name)
	}
	return false
}

// names reports whether e is local.Name with Name matching re.
func names(local string, e *ast.SelectorExpr, re *regexp.Regexp) bool {
	x, ok := e.X.(*ast.Ident)
	return ok && x.Name == local && re.MatchString(e.Sel.Name)
}
