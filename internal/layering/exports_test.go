package layering_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// testSupport are the internal packages whose exports are for tests by
// design: their callers are _test.go files.
var testSupport = []string{
	"internal/store/storetest",
	"internal/store/pgtest",
	"internal/store/stores",
	"internal/provider/providertest",
	"internal/datadir/asuser",
	"internal/modelstub",
	"internal/web/webtest",
	"internal/e2e",
	"internal/auth/authtest",
}

// unusedAllowed are exported names of internal packages that no non-test
// code names, kept for a reason given here ("path.Name").
var unusedAllowed = []string{
	"internal/store.MigrateEmpty",        // the zero MigrateMode: what a zero Options means
	"internal/rpcwire.CodeInvalidParams", // JSON-RPC's error codes, spelled as a whole set
}

// TestNoUnusedExports fails on an exported top-level function, type,
// constant or variable of an internal package that no non-test file of
// the module names: API that only tests call is dead. It reads syntax
// only (no type checking), so it is fast and errs towards calling a name
// used: a field or local of the same name as a package's export counts as
// a use within that package. Methods are not checked (an interface may
// call them by a name no file spells on the concrete type).
func TestNoUnusedExports(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	type file struct {
		pkg string // import path relative to the module ("" for the root)
		f   *ast.File
	}
	var files []file
	names := map[string]string{} // package path → package name
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		dir = filepath.ToSlash(dir)
		if dir == "." {
			dir = ""
		}
		files = append(files, file{dir, f})
		names[dir] = f.Name.Name
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	declared := map[string]token.Pos{} // "path.Name" → where
	decl := map[*ast.Ident]bool{}
	for _, x := range files {
		if !strings.HasPrefix(x.pkg, "internal/") || slices.Contains(testSupport, x.pkg) {
			continue
		}
		add := func(id *ast.Ident) {
			decl[id] = true
			if id.IsExported() {
				declared[x.pkg+"."+id.Name] = id.Pos()
			}
		}
		for _, d := range x.f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					add(d.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						add(s.Name)
					case *ast.ValueSpec:
						for _, id := range s.Names {
							add(id)
						}
					}
				}
			}
		}
	}

	used := map[string]bool{}
	for _, x := range files {
		imports := map[string]string{} // name in this file → package path
		for _, s := range x.f.Imports {
			p, _ := strconv.Unquote(s.Path.Value)
			r, ok := strings.CutPrefix(p, module)
			if !ok {
				continue
			}
			r = strings.TrimPrefix(r, "/")
			name := names[r]
			if s.Name != nil {
				name = s.Name.Name
			}
			imports[name] = r
		}
		// visit marks pkg.Name of an imported package's selector, and a
		// bare identifier as a use within this package. A selector's Sel
		// off anything else is a field or method, not checked; its X is
		// walked the same way (auth.CodeSecret.New names auth.CodeSecret).
		var visit func(n ast.Node) bool
		visit = func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok {
					if p, ok := imports[id.Name]; ok {
						used[p+"."+n.Sel.Name] = true
						return false
					}
				}
				ast.Inspect(n.X, visit)
				return false
			case *ast.Ident:
				if !decl[n] {
					used[x.pkg+"."+n.Name] = true
				}
			}
			return true
		}
		ast.Inspect(x.f, visit)
	}

	var dead []string
	for name, pos := range declared {
		if !used[name] && !slices.Contains(unusedAllowed, name) {
			dead = append(dead, fset.Position(pos).String()+": "+name)
		}
	}
	slices.Sort(dead)
	for _, d := range dead {
		t.Errorf("%s is exported but no non-test code names it: delete it (and its tests), or unexport it", d)
	}
}
