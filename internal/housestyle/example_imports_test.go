package housestyle_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tenure-dev/tenure/internal/housestyle"
)

// TestExamplesImportNoInternal fails when a test file with a runnable
// example of a public package imports an internal package: an example is
// the code users copy, and theirs cannot import tenure's internal/.
func TestExamplesImportNoInternal(t *testing.T) {
	pkgs, err := housestyle.PublicPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	examples := 0
	for _, p := range pkgs {
		dir := filepath.Join(root, p)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			if n, bad := exampleInternalImports(t, filepath.Join(dir, e.Name())); n > 0 {
				examples += n
				for _, imp := range bad {
					t.Errorf("%s: a file of examples imports %s, which a user's code cannot", filepath.Join(p, e.Name()), imp)
				}
			}
		}
	}
	if examples < 10 {
		t.Fatalf("found %d examples in the public packages; want 10 or more", examples)
	}
}

// exampleInternalImports returns the number of Example functions in the
// Go file at path and, when there are any, the internal packages it
// imports.
func exampleInternalImports(t *testing.T, path string) (int, []string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Example") {
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	var bad []string
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(p, "/internal/") || strings.HasSuffix(p, "/internal") {
			bad = append(bad, p)
		}
	}
	return n, bad
}
