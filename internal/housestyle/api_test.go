package housestyle_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tenure-dev/tenure/internal/housestyle"
)

var update = flag.Bool("update", false, "rewrite the api/ lists from the code (go test ./internal/housestyle -run TestAPI -update)")

// TestAPI fails when the exported names of a public package differ from
// its list in api/: an export added, removed or changed without the list
// is not a reviewed decision. After a deliberate change, run
// go test ./internal/housestyle -run TestAPI -update, and review the diff
// of api/ with the code.
func TestAPI(t *testing.T) {
	pkgs, err := housestyle.PublicPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".", "etcd", "memory", "partition/partitiontest", "worker"} {
		if !slices.Contains(pkgs, want) {
			t.Fatalf("PublicPackages(%s) = %v; want it to list %q", root, pkgs, want)
		}
	}
	files := make(map[string]bool)
	for _, p := range pkgs {
		if strings.HasPrefix(p, "internal") || strings.HasPrefix(p, "cmd") {
			t.Errorf("PublicPackages lists %s, which no user imports", p)
		}
		got, err := housestyle.API(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		name := housestyle.APIFile(p)
		files[name] = true
		path := filepath.Join(root, housestyle.APIDir, name)
		if *update {
			if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		for _, d := range apiDiff(t, path, got) {
			t.Errorf("%s: %s", p, d)
		}
	}
	entries, err := os.ReadDir(filepath.Join(root, housestyle.APIDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !files[e.Name()] {
			t.Errorf("%s/%s lists a package that is gone or no longer public: remove it", housestyle.APIDir, e.Name())
		}
	}
}

// apiDiff compares the list in file with got, the names the code exports,
// and describes each difference.
func apiDiff(t *testing.T, file string, got []string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return []string{file + " is missing: list the package's exports there (go test ./internal/housestyle -run TestAPI -update)"}
	}
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSpace(string(b)), "\n")
	var out []string
	for _, g := range got {
		if !slices.Contains(want, g) {
			out = append(out, "exported but not in "+file+": "+g)
		}
	}
	for _, w := range want {
		if w != "" && !slices.Contains(got, w) {
			out = append(out, "in "+file+" but not exported: "+w)
		}
	}
	return out
}

// TestAPICatchesPlanted: the fixture's list matches its code, and a copy
// of the fixture with an export planted, one removed and one signature
// changed is reported with exactly those three names.
func TestAPICatchesPlanted(t *testing.T) {
	list := filepath.Join("testdata", "documented.txt")
	got, err := housestyle.API("testdata/documented")
	if err != nil {
		t.Fatal(err)
	}
	if d := apiDiff(t, list, got); len(d) != 0 {
		t.Fatalf("control: testdata/documented against %s: %q; want no difference", list, d)
	}
	dir := copyDir(t, "testdata/documented")
	b, err := os.ReadFile(filepath.Join(dir, "documented.go"))
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(b), "func New(", "func Make(", 1)
	src = strings.Replace(src, "func (w *Widget) Size() int ", "func (w *Widget) Size() int64 ", 1)
	write(t, filepath.Join(dir, "documented.go"), src)
	write(t, filepath.Join(dir, "planted.go"), "package documented\n\n// Planted does nothing.\nfunc Planted() {}\n")
	got, err = housestyle.API(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"exported but not in " + list + ": func Make(Kind) *Widget",
		"exported but not in " + list + ": func Planted()",
		"exported but not in " + list + ": method (*Widget) Size() int64",
		"in " + list + " but not exported: func New(Kind) *Widget",
		"in " + list + " but not exported: method (*Widget) Size() int",
	}
	d := apiDiff(t, list, got)
	slices.Sort(d)
	if !slices.Equal(d, want) {
		t.Errorf("planted exports against %s =\n%s\nwant\n%s", list, strings.Join(d, "\n"), strings.Join(want, "\n"))
	}
}
