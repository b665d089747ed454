package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPrune: a build removes the cached binaries unused for long, and
// keeps its own, the recently used and the locked ones.
func TestPrune(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-2 * time.Hour)
	mk := func(name string, at time.Time) string {
		dir := filepath.Join(root, "tenure-e2e-"+name)
		for _, f := range []string{"lock", "tenure"} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(filepath.Join(dir, f), at, at); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	stale, keep, fresh, locked := mk("stale", old), mk("keep", old), mk("fresh", time.Now()), mk("locked", old)
	unlock, err := lockFile(filepath.Join(locked, "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	prune(root, keep, time.Hour)
	for dir, want := range map[string]bool{stale: false, keep: true, fresh: true, locked: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s: exists %v after prune, want %v", filepath.Base(dir), err == nil, want)
		}
	}
}
