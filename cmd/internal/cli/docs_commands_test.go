package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docCommand is a tenure command line shown in a fenced code block.
type docCommand struct {
	where string   // file:line
	args  []string // after "tenure"
}

// docCommands returns every tenure command line of the fenced code blocks
// of the Markdown file at path: a line (continued with a trailing
// backslash) that runs tenure, ./tenure or go run ./cmd/tenure, possibly
// after "$ " and VAR=value assignments, up to a comment or a shell
// operator (&&, ||, |, ;, >, <).
func docCommands(t *testing.T, path string) []docCommand {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []docCommand
	open, fenced, pending, start := false, false, "", 0
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if lang, ok := strings.CutPrefix(trimmed, "```"); ok {
			if open {
				open, fenced = false, false
			} else {
				// A block of Go, YAML, … runs no shell command.
				open = true
				fenced = lang == "" || lang == "sh" || lang == "shell" || lang == "bash" || lang == "console"
			}
			pending = ""
			continue
		}
		if !fenced {
			continue
		}
		if pending == "" {
			start = i + 1
		}
		if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
			pending += cont + " "
			continue
		}
		words, err := shellWords(pending + trimmed)
		pending = ""
		where := fmt.Sprintf("%s:%d", filepath.Base(path), start)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if args, ok := tenureArgs(words); ok {
			out = append(out, docCommand{where, args})
		}
	}
	return out
}

// tenureArgs returns the arguments of tenure in words, a shell command
// line split into words, when it runs tenure.
func tenureArgs(words []string) ([]string, bool) {
	if len(words) > 0 && words[0] == "$" {
		words = words[1:]
	}
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		words = words[1:]
	}
	switch {
	case len(words) > 0 && (words[0] == "tenure" || words[0] == "./tenure"):
		return words[1:], true
	case len(words) > 2 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/tenure":
		return words[3:], true
	}
	return nil, false
}

// shellWords splits a shell command line into words as sh does for what
// the docs use: blanks, single and double quotes, backslash escapes
// outside single quotes. It stops at a comment or a shell operator.
func shellWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	quote := rune(0)
	runes := []rune(line)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else if r == '\\' && quote == '"' && i+1 < len(runes) {
				i++
				w.WriteRune(runes[i])
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '\\' && i+1 < len(runes):
			i++
			w.WriteRune(runes[i])
			inWord = true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case r == '#' && !inWord, strings.ContainsRune("&|;<>", r):
			if inWord {
				words = append(words, w.String())
			}
			return words, nil
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// parseCommandLine does what tenure does with args before it runs a
// command, without running it: it finds the subcommand, parses its flags
// and checks its positional arguments, required flags, flag groups and
// which coordinator flags it takes. The error is the one tenure would
// print.
func parseCommandLine(args []string) error {
	root := newRootCommand()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd(args...)
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	if help, _ := cmd.Flags().GetBool("help"); help {
		return nil
	}
	if !cmd.DisableFlagParsing {
		rest = cmd.Flags().Args()
	}
	if err := cmd.ValidateArgs(rest); err != nil {
		return err
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return err
	}
	if err := cmd.ValidateFlagGroups(); err != nil {
		return err
	}
	return checkFlagScope(cmd)
}

// TestDocsCommandsParse: every tenure command line in a fenced code block
// of README.md and docs/*.md names a subcommand and flags that tenure
// accepts, with arguments it takes. The links between those pages are
// checked by TestDocsLinks, in the repository's root package.
func TestDocsCommandsParse(t *testing.T) {
	pages, err := filepath.Glob("../../../docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("docs/*.md: %v (%d pages)", err, len(pages))
	}
	perFile := map[string]int{}
	for _, page := range append([]string{"../../../README.md"}, pages...) {
		for _, c := range docCommands(t, page) {
			perFile[filepath.Base(page)]++
			if err := parseCommandLine(c.args); err != nil {
				t.Errorf("%s: tenure %s: %v", c.where, strings.Join(c.args, " "), err)
			}
		}
	}
	t.Logf("tenure command lines per page: %v", perFile)
	for _, page := range []string{"README.md", "cli.md"} {
		if perFile[page] == 0 {
			t.Errorf("%s shows no tenure command in a code block: is the extraction broken?", page)
		}
	}
}

// TestDocsCommandsParseRefuses: the check of TestDocsCommandsParse fails
// on what a doc could get wrong.
func TestDocsCommandsParseRefuses(t *testing.T) {
	for _, line := range []string{
		"tenure run --key jobs --no-such-flag -- ./worker.sh",
		"./tenure stauts --key jobs",
		"tenure status jobs",
		"tenure run --key jobs --ttl ten -- true",
		"tenure server --postgres postgres://db",
	} {
		words, err := shellWords(line)
		if err != nil {
			t.Fatal(err)
		}
		args, ok := tenureArgs(words)
		if !ok {
			t.Fatalf("%q: not found to run tenure", line)
		}
		if err := parseCommandLine(args); err == nil {
			t.Errorf("%q: accepted", line)
		}
	}
	words, _ := shellWords(`TENURE_X=1 ./tenure lease check --json && do_write "a b" # note`)
	if args, _ := tenureArgs(words); strings.Join(args, "|") != "lease|check|--json" {
		t.Errorf("args = %q; want lease check --json", args)
	}
}

// TestRootHelpNamesEveryCoordinator: the description at the top of
// tenure --help names each coordinator and the flag that selects it (the
// flag list below it is not enough: it is not read as a list of choices).
func TestRootHelpNamesEveryCoordinator(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main(t.Context(), []string{"--help"}, nil, &out, &errb); code != 0 {
		t.Fatalf("tenure --help: exit %d\n%s", code, errb.String())
	}
	top, _, ok := strings.Cut(out.String(), "\nUsage:")
	if !ok {
		t.Fatalf("tenure --help has no Usage: section:\n%s", out.String())
	}
	for _, want := range []string{"etcd", "tenure server", "--endpoints", "PostgreSQL", "--postgres", "Kubernetes", "--kubeconfig", "--namespace"} {
		if !strings.Contains(top, want) {
			t.Errorf("the description of tenure --help does not mention %q:\n%s", want, top)
		}
	}
}
