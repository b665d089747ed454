// Package housestyle checks the parts of tenure's house style (STYLE.md)
// that a program can check, for the tests in this package to keep true:
//
//   - Every exported name of a public package (one outside internal/, not a
//     command) is a reviewed decision: it is listed in the package's file in
//     api/ (API, APIFile), and the list changes with the code.
//   - No source file is longer than 500 lines and no function longer than 60
//     (from its opening brace to its closing one), outside tests and
//     testdata.
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

// PublicPackages returns the directories, relative to root (a module's
// root), of its public packages: every directory with non-test Go files of
// a package other than main, outside internal/, testdata/ and hidden
// directories, in root's module or a module nested in it (a user imports
// those as well).
func PublicPackages(root string) ([]string, error) {
	var out []string
	err := walkSources(root, true, true, func(dir string, files []string) error {
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
// skipping testdata, hidden directories, internal/ directories when
// skipInternal, and nested modules unless nested and root's go.work uses them.
func walkSources(root string, skipInternal, nested bool, fn func(dir string, files []string) error) error {
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
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && (!nested || !workspace[rel]) {
				return filepath.SkipDir // a module of its own (outside the workspace, or not asked for)
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
	err := walkSources(root, false, true, func(dir string, files []string) error {
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
