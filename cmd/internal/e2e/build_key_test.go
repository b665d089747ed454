package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildKeyStable: the key of an unchanged tree is the same each time
// (else no build is ever shared), and the race flag changes it.
func TestBuildKeyStable(t *testing.T) {
	a := mustKey(t, buildFlags(), nil)
	if b := mustKey(t, buildFlags(), nil); a != b {
		t.Fatalf("two keys of the same tree differ: %s, %s", a, b)
	}
	other := []string{"-race"}
	if TenureRace() {
		other = nil
	}
	if b := mustKey(t, other, nil); a == b {
		t.Fatalf("flags %q and %q give the same key %s", buildFlags(), other, a)
	}
}

// TestBuildKeyFollowsSources: a change to any input of the build — a
// source file of tenure or of the guard program it embeds, a file added
// to a package, the workspace, the code that runs the build — changes the
// key, so a stale binary is never reused.
func TestBuildKeyFollowsSources(t *testing.T) {
	base := mustKey(t, buildFlags(), nil)
	tenureDir := pkgDir(t, tenurePkg)
	work, err := goCmd("env", "GOWORK")
	if err != nil || work == "" || work == "off" {
		t.Fatalf("go env GOWORK: %q, %v: the tests run in the workspace", work, err)
	}
	for name, file := range map[string]string{
		"tenure source":  filepath.Join(tenureDir, "main.go"),
		"guard source":   filepath.Join(pkgDir(t, guardProg), "main.go"),
		"guard build":    filepath.Join(pkgDir(t, "github.com/tenure-dev/tenure/cmd/internal/guard/guardbin"), "doc.go"),
		"cli source":     filepath.Join(pkgDir(t, "github.com/tenure-dev/tenure/cmd/internal/cli"), "bench.go"),
		"build code":     filepath.Join(pkgDir(t, "github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"), "guardtest.go"),
		"added file":     filepath.Join(tenureDir, "zz_added.go"),
		"workspace file": work,
	} {
		t.Run(name, func(t *testing.T) {
			edited := edit(t, file)
			if k := mustKey(t, buildFlags(), map[string]string{file: edited}); k == base {
				t.Errorf("%s changed and the key did not: %s", file, k)
			}
		})
	}
}

// edit writes into a temporary file a copy of file with its last byte
// changed (size kept: the key must hash content, not just size), or Go
// source of package main when file does not exist, and returns its path.
func edit(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	switch {
	case os.IsNotExist(err):
		b = []byte("package main\n")
	case err != nil:
		t.Fatal(err)
	case len(b) == 0 || b[len(b)-1] != '\n':
		b = append(b, '\n')
	default:
		b[len(b)-1] = ' '
	}
	out := filepath.Join(t.TempDir(), filepath.Base(file))
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustKey(t *testing.T, flags []string, overlay map[string]string) string {
	t.Helper()
	k, err := BuildKey(flags, overlay)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pkgDir(t *testing.T, pkg string) string {
	t.Helper()
	dir, err := goCmd("list", "-f", "{{.Dir}}", pkg)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(dir)
}
