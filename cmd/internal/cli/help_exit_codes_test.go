package cli

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// exitCodeLine is one code of a command's "Exit codes:" help, or one row
// of docs/exit-codes.md's table.
type exitCodeLine struct {
	code int
	text string
}

// helpExitCodes returns the numbered lines of the "Exit codes:" section
// of help, each with its continuation lines joined.
func helpExitCodes(help string) []exitCodeLine {
	_, section, ok := strings.Cut(help, "\nExit codes:\n")
	if !ok {
		return nil
	}
	entry := regexp.MustCompile(`^  (\d+)\s+(.*)$`)
	var out []exitCodeLine
	for line := range strings.SplitSeq(section, "\n") {
		if !strings.HasPrefix(line, "  ") {
			break // the section ends at a blank line or the next heading
		}
		if m := entry.FindStringSubmatch(line); m != nil {
			code, _ := strconv.Atoi(m[1])
			out = append(out, exitCodeLine{code, m[2]})
		} else if len(out) > 0 && !regexp.MustCompile(`^  \S`).MatchString(line) {
			out[len(out)-1].text += " " + strings.TrimSpace(line)
		}
	}
	return out
}

// docExitCodes returns the rows of docs/exit-codes.md's table whose code is
// a number.
func docExitCodes(t *testing.T) []exitCodeLine {
	t.Helper()
	b, err := os.ReadFile("../../../docs/exit-codes.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []exitCodeLine
	for line := range strings.SplitSeq(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		if code, err := strconv.Atoi(strings.TrimSpace(cells[1])); err == nil {
			out = append(out, exitCodeLine{code, cells[2]})
		}
	}
	if len(out) < 10 {
		t.Fatalf("docs/exit-codes.md: %d numbered rows in the table; want the whole table", len(out))
	}
	return out
}

// commandPaths returns the argument lists that name every visible command
// of c's tree, c itself first.
func commandPaths(c *cobra.Command, path []string) [][]string {
	out := [][]string{path}
	for _, sub := range c.Commands() {
		if sub.Hidden || !sub.IsAvailableCommand() {
			continue
		}
		out = append(out, commandPaths(sub, append(append([]string(nil), path...), sub.Name()))...)
	}
	return out
}

// TestHelpExitCodesMatchDocs: every exit code a command's --help lists is
// in docs/exit-codes.md's table, and a cause the help names with a code
// (a port in use, a data dir in use, an unreachable coordinator, refused
// credentials) has the code the table gives that cause. The exit codes
// themselves are the end-to-end tests' (TestServerPortInUse: a port in use
// exits 69).
func TestHelpExitCodesMatchDocs(t *testing.T) {
	docs := docExitCodes(t)
	documented := map[int]bool{}
	for _, d := range docs {
		documented[d.code] = true
	}
	// causes are words that name one cause; the table's row that has the
	// word says the cause's code.
	causes := map[string]*regexp.Regexp{
		"a port in use":     regexp.MustCompile(`\bports?\b`),
		"a data dir in use": regexp.MustCompile(`\bdata dir\b`),
		"unreachable":       regexp.MustCompile(`\bcould not be reached\b`),
		"refused":           regexp.MustCompile(`\bcredentials\b`),
	}
	causeCode := map[string]int{}
	for cause, re := range causes {
		for _, d := range docs {
			if re.MatchString(d.text) {
				if c, ok := causeCode[cause]; ok && c != d.code {
					t.Fatalf("docs/exit-codes.md names %s under both %d and %d", cause, c, d.code)
				}
				causeCode[cause] = d.code
			}
		}
		if _, ok := causeCode[cause]; !ok {
			t.Fatalf("docs/exit-codes.md names no code for %s (%s)", cause, re)
		}
	}
	root := newRootCommand()
	root.InitDefaultHelpCmd()
	checked := 0
	for _, path := range commandPaths(root, nil) {
		var out, errb bytes.Buffer
		args := append(append([]string(nil), path...), "--help")
		if code := Main(context.Background(), args, strings.NewReader(""), &out, &errb); code != ExitOK {
			t.Fatalf("tenure %s = %d; want 0\n%s", strings.Join(args, " "), code, errb.String())
		}
		name := strings.TrimSpace("tenure " + strings.Join(path, " "))
		for _, l := range helpExitCodes(out.String()) {
			checked++
			if !documented[l.code] {
				t.Errorf("%s --help lists exit code %d (%s), which docs/exit-codes.md's table does not have", name, l.code, l.text)
			}
			for cause, re := range causes {
				if re.MatchString(l.text) && l.code != causeCode[cause] {
					t.Errorf("%s --help: %d %q; docs/exit-codes.md gives %s code %d", name, l.code, l.text, cause, causeCode[cause])
				}
			}
		}
	}
	if checked < 30 {
		t.Errorf("%d exit code lines read from the commands' help; want every command's", checked)
	}
}
