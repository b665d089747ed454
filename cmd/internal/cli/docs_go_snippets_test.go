package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goBlocks returns the ```go blocks of the Markdown file at path, each as
// its lines.
func goBlocks(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	var cur []string
	in := false
	for line := range strings.SplitSeq(string(b), "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```go":
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			out = append(out, cur)
		case in:
			cur = append(cur, line)
		}
	}
	return out
}

// dedented returns lines without their leading tabs.
func dedented(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimLeft(l, "\t")
	}
	return out
}

// containsRun reports whether want is a contiguous run of have.
func containsRun(have, want []string) bool {
	for i := 0; i+len(want) <= len(have); i++ {
		match := true
		for j := range want {
			if have[i+j] != want[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// TestDocsGoSnippetsCompiled: the Go code the README and
// docs/kubernetes.md show is, line for line (indentation aside), code of a
// package's example_test.go, so it compiles against the API as it is.
func TestDocsGoSnippetsCompiled(t *testing.T) {
	root := "../../.."
	files, err := filepath.Glob(filepath.Join(root, "*", "example_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "example_test.go"))
	examples := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		examples[f] = dedented(strings.Split(string(b), "\n"))
	}
	for _, doc := range []string{"README.md", "docs/kubernetes.md"} {
		blocks := goBlocks(t, filepath.Join(root, doc))
		if len(blocks) == 0 {
			t.Errorf("%s has no ```go block; the test checks nothing there", doc)
		}
		for _, block := range blocks {
			want, found := dedented(block), false
			for _, lines := range examples {
				if containsRun(lines, want) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s: this Go block is not code of any example_test.go (copy it from one, as it compiles):\n%s", doc, strings.Join(block, "\n"))
			}
		}
	}
}
