package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// maxCoordinatorCommits is how many commits to coordinator code may lie
// between the commit docs/speed.md was measured at and HEAD.
const maxCoordinatorCommits = 10

// coordinatorCode is the code whose speed docs/speed.md measures: the
// root package, the coordinators, partition groups and the benchmarks
// themselves, tests excluded.
var coordinatorCode = []string{
	":(glob)*.go", ":(glob)etcd/**/*.go", ":(glob)postgres/**/*.go", ":(glob)kube/**/*.go",
	":(glob)memory/**/*.go", ":(glob)partition/**/*.go", ":(glob)cmd/internal/bench/**/*.go",
	":(exclude,glob)**/*_test.go",
}

// repoRoot is the top of the repository's work tree.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse --show-toplevel: %v (docs/speed.md's commit is checked against git history)", err)
	}
	return strings.TrimSpace(string(out))
}

// TestSpeedDocRendered: docs/speed.md is exactly what render makes of
// docs/speed.json, whose runs are the plan's: a figure edited by hand, or a
// benchmark added to the plan and not measured, fails.
func TestSpeedDocRendered(t *testing.T) {
	root := repoRoot(t)
	rec, err := readRecord(filepath.Join(root, "docs/speed.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := render(&want, rec); err != nil {
		t.Fatalf("render docs/speed.json: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(root, "docs/speed.md"))
	if err != nil {
		t.Fatal(err)
	}
	gotLines, wantLines := strings.Split(string(got), "\n"), strings.Split(want.String(), "\n")
	for i := range max(len(gotLines), len(wantLines)) {
		g, w := line(gotLines, i), line(wantLines, i)
		if g != w {
			t.Fatalf("docs/speed.md line %d is\n\t%q\nrendered from docs/speed.json it is\n\t%q\n"+
				"docs/speed.md is generated: run scripts/speed.sh (figures), or go run ./cmd/internal/speeddoc render (prose in cmd/internal/speeddoc)", i+1, g, w)
		}
	}
}

func line(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of file)"
}

// TestSpeedDocCurrent: docs/speed.json was measured on a clean tree at a
// commit of HEAD's history with at most maxCoordinatorCommits commits to
// coordinator code since.
func TestSpeedDocCurrent(t *testing.T) {
	root := repoRoot(t)
	rec, err := readRecord(filepath.Join(root, "docs/speed.json"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Dirty {
		t.Errorf("docs/speed.json was measured on a tree with changes not committed at %s: run scripts/speed.sh on a clean tree", rec.Commit)
	}
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := git("merge-base", "--is-ancestor", rec.Commit, "HEAD"); err != nil {
		t.Fatalf("docs/speed.json was measured at %s, which is not in HEAD's history (%v %s): run scripts/speed.sh", rec.Commit, err, out)
	}
	out, err := git(append([]string{"rev-list", "--no-merges", rec.Commit + "..HEAD", "--"}, coordinatorCode...)...)
	if err != nil {
		t.Fatalf("git rev-list: %v %s", err, out)
	}
	var commits []string
	if out != "" {
		commits = strings.Split(out, "\n")
	}
	if len(commits) > maxCoordinatorCommits {
		t.Errorf("docs/speed.json was measured at %.12s; %d commits to coordinator code since (at most %d), the newest %.12s: run scripts/speed.sh",
			rec.Commit, len(commits), maxCoordinatorCommits, commits[0])
	}
	t.Logf("measured at %.12s, %s commits to coordinator code since", rec.Commit, strconv.Itoa(len(commits)))
}

// TestPartitionsMissMarked: a partition-group figure that misses its
// target is marked "(not met)" beside it, and one that meets it is not.
func TestPartitionsMissMarked(t *testing.T) {
	rec, err := readRecord(filepath.Join(repoRoot(t), "docs/speed.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rec.Runs {
		if r.Partitions != nil {
			p := *r.Partitions
			p.LeaveP99MS, p.ColdStartMS = 999, 20_000 // etcd's and PostgreSQL's the same
			rec.Runs[i].Partitions = &p
		}
	}
	var page bytes.Buffer
	if err := render(&page, rec); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| planned-leave hand-over p99 | ≤ 1 s | 999 ms | 999 ms |",
		"| cold start to fully owned | < 20 s | 20.00 s **(not met)** | 20.00 s **(not met)** |",
	} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page has no line %q", want)
		}
	}
}
