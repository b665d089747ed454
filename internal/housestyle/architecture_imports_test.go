package housestyle_test

import (
	"go/build"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// modulePath is the import path of the repository's root module.
const modulePath = "github.com/tenure-dev/tenure"

// TestArchitectureImports fails when a row of docs/architecture.md's table
// of packages names imports of tenure's own other than those its packages
// make (their non-test files, on this platform): the column is read by
// whoever follows the import graph, and goes stale with every change of it.
func TestArchitectureImports(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := importRows(string(b))
	if len(rows) < 10 {
		t.Fatalf("docs/architecture.md: %d rows in the table of packages and their imports; want 10 or more", len(rows))
	}
	for _, r := range rows {
		if r.every {
			continue
		}
		if got := rowImports(t, r.pkgs); !slices.Equal(got, r.imports) {
			t.Errorf("docs/architecture.md: the row of %s lists the imports %s; its packages import %s",
				quoteAll(r.pkgs), quoteAll(r.imports), quoteAll(got))
		}
	}
}

// rowImports is the sorted imports of tenure's own that pkgs make, less
// pkgs themselves.
func rowImports(t *testing.T, pkgs []string) []string {
	t.Helper()
	var out []string
	for _, p := range pkgs {
		for _, imp := range ownImports(t, p) {
			if !slices.Contains(pkgs, imp) && !slices.Contains(out, imp) {
				out = append(out, imp)
			}
		}
	}
	slices.Sort(out)
	return out
}

// quoteAll is names as the table writes them: "`a`, `b`", or "none".
func quoteAll(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return "`" + strings.Join(names, "`, `") + "`"
}

// An importRow is one row of the table of packages: its packages (as
// paths inside the repository, "tenure" for the root) and the imports of
// tenure's own it lists (backticked; none for "none"), or every when it
// says "every package".
type importRow struct {
	pkgs, imports []string
	every         bool
}

var backticked = regexp.MustCompile("`([^`]+)`")

// importRows reads the table whose last column is "imports of tenure's
// own" from the markdown doc.
func importRows(doc string) []importRow {
	var rows []importRow
	in := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "|") && strings.Contains(line, "imports of tenure's own") {
			in = true
			continue
		}
		if !in || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		first, last := cells[0], cells[len(cells)-1]
		r := importRow{pkgs: names(first), imports: names(last), every: strings.Contains(last, "every package")}
		slices.Sort(r.imports)
		rows = append(rows, r)
	}
	return rows
}

// names is every backticked name in cell.
func names(cell string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// ownImports is the imports of tenure's own that package p's non-test
// files make, named as the table names packages.
func ownImports(t *testing.T, p string) []string {
	t.Helper()
	dir := root
	if p != "tenure" {
		dir = filepath.Join(root, filepath.FromSlash(p))
	}
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatalf("docs/architecture.md names package %s: %v", p, err)
	}
	var out []string
	for _, imp := range bp.Imports {
		switch {
		case imp == modulePath:
			out = append(out, "tenure")
		case strings.HasPrefix(imp, modulePath+"/"):
			out = append(out, strings.TrimPrefix(imp, modulePath+"/"))
		}
	}
	return out
}
