package housestyle_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tenure-dev/tenure/internal/housestyle"
)

// root is the module's root, from this package's directory.
const root = "../.."

// pendingSizes are the files and functions over the limits in code that
// other work in progress was changing when this test landed; as for
// pendingNames, the list only shrinks.
var pendingSizes = []string{}

// checkPending reports each finding unless its subject (what key returns
// for it) is pending, and each pending subject no longer found.
func checkPending(t *testing.T, found, pending []string, key func(string) string, format string) {
	t.Helper()
	seen := make(map[string]bool)
	for _, f := range found {
		if k := key(f); slices.Contains(pending, k) {
			seen[k] = true
			continue
		}
		t.Errorf(format, f)
	}
	for _, p := range pending {
		if !seen[p] {
			t.Errorf("%s is fixed: remove it from the pending list", p)
		}
	}
}

// TestSizes fails on every source file longer than 500 lines, and every
// function longer than 60, outside tests and testdata.
func TestSizes(t *testing.T) {
	bad, err := housestyle.Oversized(root)
	if err != nil {
		t.Fatal(err)
	}
	where := func(f string) string { return f[:strings.LastIndex(f, ": ")] } // "path[: Func]: N lines"
	format := fmt.Sprintf("too long: %%s (at most %d lines a file, %d a function)", housestyle.MaxFileLines, housestyle.MaxFuncLines)
	checkPending(t, bad, pendingSizes, where, format)
}

// copyDir copies the .go files of dir into a new temporary directory.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	tmp := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(tmp, e.Name()), string(b))
	}
	return tmp
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOversizedCatchesPlanted: in a planted tree, a 501-line file and a
// 61-line function are reported; a 500-line file, a 60-line function, and
// anything in tests, testdata, hidden directories or a nested module are not.
func TestOversizedCatchesPlanted(t *testing.T) {
	dir := t.TempDir()
	fn := func(name string, lines int) string { // a function of lines lines
		return "func " + name + "() {\n" + strings.Repeat("\t_ = 0\n", lines-2) + "}\n"
	}
	pad := func(text string, lines int) string { // text padded to lines lines
		return text + strings.Repeat("\n", lines-strings.Count(text, "\n"))
	}
	write(t, filepath.Join(dir, "go.mod"), "module example.com/planted\n")
	write(t, filepath.Join(dir, "ok.go"), pad("package planted\n\n"+fn("Sixty", 60), 500))
	write(t, filepath.Join(dir, "long.go"), pad("package planted\n", 501))
	write(t, filepath.Join(dir, "sub", "f.go"), "package sub\n\ntype T struct{}\n\n"+strings.Replace(fn("Long", 61), "func ", "func (t *T) ", 1))
	write(t, filepath.Join(dir, "ok_test.go"), pad("package planted\n\n"+fn("TestLong", 100), 600))
	write(t, filepath.Join(dir, "testdata", "x.go"), pad("package x\n\n"+fn("Long", 100), 600))
	write(t, filepath.Join(dir, ".hidden", "x.go"), pad("package x\n", 600))
	write(t, filepath.Join(dir, "tools", "go.mod"), "module example.com/tools\n")
	write(t, filepath.Join(dir, "tools", "x.go"), pad("package x\n", 600))
	got, err := housestyle.Oversized(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"sub/f.go: T.Long: 61 lines", "long.go: 501 lines"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Oversized(planted tree) = %q; want %q", got, want)
	}
}
