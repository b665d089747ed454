// Package housestyle checks the parts of tenure's house style (STYLE.md)
// that a program can check, for the tests in this package to keep true:
//
//   - A public package (one outside internal/, not a command) exports only
//     what users call, and each exported name says so: it has a runnable
//     example (go/doc's ExampleName, or for a type ExampleType or
//     ExampleType_Method, with an Output comment, so `go test` runs it), or
//     its doc comment has a who-sentence. Constants and variables of an
//     exported type, which go doc lists under the type, are covered by the
//     type; every exported method has a doc comment.
//   - No source file is longer than 500 lines and no function longer than 60
//     (from its opening brace to its closing one), outside tests and
//     testdata.
//
// A who-sentence names who calls or uses the name: its doc comment says
// "called by" or "used by" ("Used by tenure status."), has a sentence that
// begins with "Users" or "Callers" ("Users pass it to New.", "Callers match
// it with errors.Is."), or says what the name is "exported for" ("It is
// exported for readers of a group that know only P."). For a group of
// constants or variables declared together, the group's doc comment speaks
// for all of them.
package housestyle

import (
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Limits of the house style: the longest source file and function, in lines.
const (
	MaxFileLines = 500
	MaxFuncLines = 60
)

// whoSentence matches a doc comment that says who calls or uses its name.
var whoSentence = regexp.MustCompile(`(?i:\b(?:called|used)\s+by\b)|(?:^\s*|[.:;]\s+|\n\s*\n\s*)(?:Users|Callers)\b|\bexported\s+for\b`)

// SaysWho reports whether doc, a doc comment's text, has a who-sentence.
func SaysWho(doc string) bool { return whoSentence.MatchString(doc) }

// PublicPackages returns the directories, relative to root (a module's
// root), of its public packages: every directory with non-test Go files of
// a package other than main, outside internal/, testdata/, hidden
// directories and nested modules.
func PublicPackages(root string) ([]string, error) {
	var out []string
	err := walkSources(root, true, func(dir string, files []string) error {
		fset := token.NewFileSet()
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, filepath.Join(root, dir, f), nil, parser.PackageClauseOnly)
			if err != nil {
				return err
			}
			if af.Name.Name != "main" {
				out = append(out, dir)
			}
			return nil
		}
		return nil
	})
	return out, err
}

// walkSources calls fn with each directory under root (relative to it)
// that holds .go files matching the build context, and those files' names,
// skipping testdata, hidden directories, nested modules that root's go.work
// does not use and, when skipInternal, internal/ directories.
func walkSources(root string, skipInternal bool, fn func(dir string, files []string) error) error {
	workspace, err := workspaceDirs(root)
	if err != nil {
		return err
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		name := d.Name()
		if rel != "." {
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || (skipInternal && name == "internal") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && !workspace[rel] {
				return filepath.SkipDir // a module of its own, outside the workspace
			}
		}
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		var files []string
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") {
				if ok, err := build.Default.MatchFile(path, e.Name()); err == nil && ok {
					files = append(files, e.Name())
				}
			}
		}
		if len(files) == 0 {
			return nil
		}
		return fn(rel, files)
	})
}

// useLine matches a directory of a go.work use directive or block.
var useLine = regexp.MustCompile(`(?m)^\s*(?:use\s+)?\./([^\s()]+)\s*$`)

// workspaceDirs returns the directories, relative to root, of the nested
// modules that root's go.work uses (none without a go.work).
func workspaceDirs(root string) (map[string]bool, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.work"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	dirs := make(map[string]bool)
	for _, m := range useLine.FindAllStringSubmatch(string(b), -1) {
		dirs[filepath.FromSlash(m[1])] = true
	}
	return dirs, nil
}

// Unexplained returns the exported names of the package in dir that say
// nobody calls them: without a runnable example or a who-sentence, or, for
// a method, without a doc comment. Each is "pkg.Name: why" (or
// "pkg.Type.Method: why"), sorted.
func Unexplained(dir string) ([]string, error) {
	p, err := parseDoc(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	check := func(name, docText string, examples ...[]*doc.Example) {
		if !runnable(examples...) && !SaysWho(docText) {
			out = append(out, fmt.Sprintf("%s.%s: no runnable example, and no doc sentence saying who calls it", p.Name, name))
		}
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			check(strings.Join(v.Names, ", "), v.Doc)
		}
	}
	values(p.Consts)
	values(p.Vars)
	for _, f := range p.Funcs {
		check(f.Name, f.Doc, f.Examples)
	}
	for _, t := range p.Types {
		exs := [][]*doc.Example{t.Examples}
		for _, m := range t.Methods {
			exs = append(exs, m.Examples)
			if ast.IsExported(m.Name) && strings.TrimSpace(m.Doc) == "" {
				out = append(out, fmt.Sprintf("%s.%s.%s: no doc comment", p.Name, t.Name, m.Name))
			}
		}
		check(t.Name, t.Doc, exs...)
		for _, f := range t.Funcs {
			check(f.Name, f.Doc, f.Examples)
		}
	}
	sort.Strings(out)
	return out, nil
}

// runnable reports whether one of examples has an Output comment, so that
// go test runs it.
func runnable(examples ...[]*doc.Example) bool {
	for _, exs := range examples {
		for _, ex := range exs {
			if ex.Output != "" || ex.EmptyOutput {
				return true
			}
		}
	}
	return false
}

// parseDoc reads the documentation of the package in dir, with the
// examples of its test files.
func parseDoc(dir string) (*doc.Package, error) {
	fset := token.NewFileSet()
	var files []*ast.File
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		if ok, err := build.Default.MatchFile(dir, e.Name()); err != nil || !ok {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("housestyle: no Go files in %s", dir)
	}
	return doc.NewFromFiles(fset, files, dir)
}

// Oversized returns the source files under root (outside tests, testdata,
// hidden directories and nested modules) longer than MaxFileLines, and
// their functions longer than MaxFuncLines: "path: N lines" and
// "path: Func: N lines", longest first.
func Oversized(root string) ([]string, error) {
	type offender struct {
		what  string
		lines int
	}
	var found []offender
	err := walkSources(root, false, func(dir string, files []string) error {
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			path := filepath.Join(dir, name)
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, filepath.Join(root, path), nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			if n := fset.File(f.Pos()).LineCount(); n > MaxFileLines {
				found = append(found, offender{path, n})
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				n := fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Body.Lbrace).Line + 1
				if n > MaxFuncLines {
					found = append(found, offender{path + ": " + funcName(fd), n})
				}
			}
		}
		return nil
	})
	sort.SliceStable(found, func(i, j int) bool { return found[i].lines > found[j].lines })
	out := make([]string, len(found))
	for i, o := range found {
		out[i] = fmt.Sprintf("%s: %d lines", o.what, o.lines)
	}
	return out, err
}

// funcName is fd's name, with its receiver's type for a method: "T.M".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}
