package tenure_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink matches a relative Markdown link target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)

// TestDocsLinks: every relative link in README.md and docs/*.md names a
// file of the repository, and every page of docs/ is linked from the
// README or from another page, so no page is lost in the move out of the
// README.
func TestDocsLinks(t *testing.T) {
	pages, err := filepath.Glob("docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("docs/*.md: %v (%d pages)", err, len(pages))
	}
	linked := map[string]bool{}
	for _, page := range append([]string{"README.md"}, pages...) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := filepath.Join(filepath.Dir(page), m[1])
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links to %s, which does not exist", page, m[1])
			}
			if target != page {
				linked[target] = true
			}
		}
	}
	for _, page := range pages {
		if !linked[page] {
			t.Errorf("%s is linked from neither README.md nor another page of docs/", page)
		}
	}
	readme, _ := os.ReadFile("README.md")
	ci, _ := os.ReadFile(".ci/run")
	var command string
	for _, l := range strings.Split(string(ci), "\n") {
		if strings.HasPrefix(l, "go test -race ") {
			command = l
		}
	}
	if command == "" || !strings.Contains(string(readme), command) {
		t.Errorf("README.md does not show .ci/run's test command %q as written", command)
	}
}
