package syncer

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestState_OnlyStateFilesReachBbolt keeps the local state behind one
// type: only the files of the state (state*.go) import bbolt or reach the
// transaction inside an stx (its field tx); every other file goes through
// stx's methods. The check is syntactic, so it also fails when another
// type of the package declares a field named tx, which would make a
// selector .tx ambiguous.
func TestState_OnlyStateFilesReachBbolt(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		stateFile := strings.HasPrefix(name, "state")
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if !stateFile && (path == "go.etcd.io/bbolt" || strings.HasPrefix(path, "go.etcd.io/bbolt/")) {
				t.Errorf("%s imports %s: only state*.go may reach bbolt", fset.Position(im.Pos()), path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if n.Sel.Name == "tx" && !stateFile {
					t.Errorf("%s selects .tx: use a method of stx (in state*.go)", fset.Position(n.Sel.Pos()))
				}
			case *ast.TypeSpec:
				st, ok := n.Type.(*ast.StructType)
				if !ok || n.Name.Name == "stx" {
					return true
				}
				for _, fld := range st.Fields.List {
					for _, id := range fld.Names {
						if id.Name == "tx" {
							t.Errorf("%s: type %s has a field tx: only stx may, so that .tx means stx's", fset.Position(id.Pos()), n.Name.Name)
						}
					}
				}
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked %d files: not run in the package directory?", checked)
	}
}
