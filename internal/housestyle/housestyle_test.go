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

// pendingNames are exported names in files that other work in progress was
// changing when this test landed (#22 item 2): their doc lines, or their
// unexporting, come with that work. The test fails when one of them is
// explained or gone, so that the list only shrinks. etcd.Coordinator and
// etcd.Register are runnable in package embedded's Example_etcd* (a runnable
// example of package etcd needs an etcd server, which the etcd module does
// not require); the checked-in list of exported names replaces this rule.
var pendingNames = []string{"etcd.Coordinator", "etcd.Register"}

// unexplainedNotPending returns Unexplained(dir) without the pending names.
func unexplainedNotPending(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, f := range unexplained(t, dir) {
		if n, _, _ := strings.Cut(f, ": "); !slices.Contains(pendingNames, n) {
			out = append(out, f)
		}
	}
	return out
}

// pendingSizes are the files and functions over the limits in code that
// other work in progress was changing when this test landed; as for
// pendingNames, the list only shrinks.
var pendingSizes = []string{
	"elector.go", "elector.go: Elector.campaign", "elector.go: Elector.lead",
	"config.go: Config.Validate",
	"cmd/internal/cli/cli.go: newRootCommand",
	"cmd/internal/cli/verify.go: newVerifyCommand",
	"postgres/coordinator.go: newStatements",
	"cmd/internal/bench/throughput.go: Throughput",
	"cmd/internal/chaos/run.go: Run",
	"kube/watch.go: watcher.run",
}

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

// TestPublicNamesSayWhoCalls fails on every exported name of a public
// package without a runnable example or a doc sentence saying who calls it
// (see the package doc for the convention), and on exported methods without
// a doc comment.
func TestPublicNamesSayWhoCalls(t *testing.T) {
	pkgs, err := housestyle.PublicPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".", "etcd", "memory", "partition/partitiontest", "worker"} {
		if !slices.Contains(pkgs, want) {
			t.Fatalf("PublicPackages(%s) = %v; want it to list %q", root, pkgs, want)
		}
	}
	var found []string
	for _, p := range pkgs {
		if strings.HasPrefix(p, "internal") || strings.HasPrefix(p, "cmd") {
			t.Errorf("PublicPackages lists %s, which no user imports", p)
		}
		bad, err := housestyle.Unexplained(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, bad...)
	}
	name := func(f string) string { n, _, _ := strings.Cut(f, ": "); return n } // "pkg.Name: why"
	checkPending(t, found, pendingNames, name, "%s")
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

func TestSaysWho(t *testing.T) {
	tests := []struct {
		doc  string
		want bool
	}{
		{"Rebalance maps names. Members call it themselves; it is exported for users who place work.", true},
		{"Names returns names.\nIt is exported for readers of a group.", true},
		{"Sentinel errors. Callers match them with errors.Is.", true},
		{"WithTTL sets the TTL. Users pass it to\nRunCoordinatorTests.", true},
		{"Table is a table. Used by tenure status.", true},
		{"Stats is read by nobody; it is called by the runner.", true},
		{"New returns a Fence.", false},
		{"The usersClient field is set.", false},
		{"Option configures users' calls.", false}, // "users" mid-sentence says nothing
		{"Callersville is a town.", false},
		{"Source is an interface:\n\n\tToken() uint64\n\nUsers set Transport.Source to one.", true},
		{"Source is set for the\nUsers table.", false}, // a wrapped line is no sentence
		{"It is called\nby the runner.", true},
		{"", false},
	}
	for _, tc := range tests {
		if got := housestyle.SaysWho(tc.doc); got != tc.want {
			t.Errorf("SaysWho(%q) = %v; want %v", tc.doc, got, tc.want)
		}
	}
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

func unexplained(t *testing.T, dir string) []string {
	t.Helper()
	bad, err := housestyle.Unexplained(dir)
	if err != nil {
		t.Fatal(err)
	}
	return bad
}

// TestUnexplainedCatchesPlanted: a fixture package that follows the
// convention in every way it allows is clean, and each export planted in a
// copy of it without an explanation is reported, and nothing else.
func TestUnexplainedCatchesPlanted(t *testing.T) {
	if bad := unexplained(t, "testdata/documented"); len(bad) != 0 {
		t.Fatalf("control: Unexplained(testdata/documented) = %q; want nothing", bad)
	}
	dir := copyDir(t, "testdata/documented")
	write(t, filepath.Join(dir, "planted.go"), `package documented

// Planted does nothing.
func Planted() {}

// Unrun has an example that go test does not run.
func Unrun() {}

func (w *Widget) Shrink() {}

// Max is the largest; the users of Widget read it.
const Max = 3

// Spare is a type whose doc says nothing of its callers.
type Spare struct{}

// NewSpare is covered neither by the type's doc nor by an example of it.
func NewSpare() Spare { return Spare{} }
`)
	write(t, filepath.Join(dir, "planted_test.go"), `package documented_test

import "example.com/documented"

func ExampleUnrun() { documented.Unrun() }
`)
	want := []string{
		"documented.Max: no runnable example, and no doc sentence saying who calls it",
		"documented.NewSpare: no runnable example, and no doc sentence saying who calls it",
		"documented.Planted: no runnable example, and no doc sentence saying who calls it",
		"documented.Spare: no runnable example, and no doc sentence saying who calls it",
		"documented.Unrun: no runnable example, and no doc sentence saying who calls it",
		"documented.Widget.Shrink: no doc comment",
	}
	if got := unexplained(t, dir); !slices.Equal(got, want) {
		t.Errorf("Unexplained(fixture with planted exports) =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestUnexplainedCatchesPlantedInEtcd: the etcd package as it is passes;
// a copy with one new export documented the way most code is, saying what
// it does but not who calls it, fails with that name alone.
func TestUnexplainedCatchesPlantedInEtcd(t *testing.T) {
	dir := copyDir(t, filepath.Join(root, "etcd"))
	if bad := unexplainedNotPending(t, dir); len(bad) != 0 {
		t.Fatalf("control: Unexplained(etcd) = %q; want nothing but the pending names", bad)
	}
	write(t, filepath.Join(dir, "planted.go"), `package etcd

// LeaseOf returns the lease key rides on.
func (c *Coordinator) LeaseOf(key string) int64 { return 0 }

// KeyCount returns how many keys c holds.
func KeyCount(c *Coordinator) int { return 0 }
`)
	want := []string{"etcd.KeyCount: no runnable example, and no doc sentence saying who calls it"}
	if got := unexplainedNotPending(t, dir); !slices.Equal(got, want) {
		t.Errorf("Unexplained(etcd with a planted export) = %q; want %q", got, want)
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
