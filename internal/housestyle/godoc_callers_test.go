package housestyle_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tenure-dev/tenure/internal/housestyle"
)

// callerWords are the phrases of a godoc line that says who calls a name
// rather than what it is: "Users pass it to New", "as the tenure command
// does", "`tenure run` passes one". An operator's own command
// (`tenure release --force`) is what a user does, not a caller.
var callerWords = regexp.MustCompile("Users (pass|call|fill|start|read|with|get)\\b|users who|as the tenure command|as Example\\w* does|`tenure (run|server|demo|bench|verify|status|watch)\\b")

// pendingCallers are the exported names whose godoc still says who calls
// them, in code other work in progress is changing; the list only shrinks.
var pendingCallers = []string{}

// TestGodocSaysNoCallers fails when the godoc of an exported name of a
// public package says who calls it: a reader wants what the name is and
// why, and the list of callers goes stale with every caller.
func TestGodocSaysNoCallers(t *testing.T) {
	pkgs, err := housestyle.PublicPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, p := range pkgs {
		for name, text := range godocs(t, filepath.Join(root, p)) {
			if m := callerWords.FindString(text); m != "" {
				found = append(found, name+": "+m)
			}
		}
	}
	checkPending(t, found, pendingCallers, func(f string) string { n, _, _ := strings.Cut(f, ":"); return n },
		"the godoc of %s: says who calls it; say what it is and why")
}

// godocs returns the doc text of every exported name of the package in
// dir (its package doc, consts, vars, funcs, types, methods and struct
// fields), keyed by "pkg.Name" or "pkg.Type.Name".
func godocs(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	d, err := doc.NewFromFiles(fset, files, "x")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{d.Name: d.Doc}
	add := func(prefix string, vs []*doc.Value) {
		for _, v := range vs {
			out[prefix+strings.Join(v.Names, ",")] = v.Doc
		}
	}
	add(d.Name+".", d.Consts)
	add(d.Name+".", d.Vars)
	for _, f := range d.Funcs {
		out[d.Name+"."+f.Name] = f.Doc
	}
	for _, ty := range d.Types {
		out[d.Name+"."+ty.Name] = ty.Doc + fieldDocs(ty.Decl)
		add(d.Name+".", ty.Consts)
		add(d.Name+".", ty.Vars)
		for _, f := range ty.Funcs {
			out[d.Name+"."+f.Name] = f.Doc
		}
		for _, f := range ty.Methods {
			out[d.Name+"."+ty.Name+"."+f.Name] = f.Doc
		}
	}
	return out
}

// fieldDocs is the docs of the exported fields and methods of the types
// decl declares.
func fieldDocs(decl *ast.GenDecl) string {
	var b strings.Builder
	ast.Inspect(decl, func(n ast.Node) bool {
		if f, ok := n.(*ast.Field); ok && f.Doc != nil && len(f.Names) > 0 && f.Names[0].IsExported() {
			b.WriteString(f.Doc.Text())
		}
		return true
	})
	return b.String()
}
