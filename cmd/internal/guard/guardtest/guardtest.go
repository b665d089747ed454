// Package guardtest builds tenure the way a release is built, with the
// guard's own program embedded (package guardbin), for tests that run the
// tenure binary. It builds the guard by running guardbin's go:generate
// directive itself, with its output redirected, and embeds the result with
// go build -overlay: nothing is written to the source tree, and whatever
// a developer generated into it is neither used nor changed.
package guardtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tenure-dev/tenure/cmd/internal/guard/guardbin"
)

// guardbinPkg is the package that embeds the guard program.
const guardbinPkg = "github.com/tenure-dev/tenure/cmd/internal/guard/guardbin"

// Build builds the guard program into dir by guardbin's go:generate
// directive, adding extra go build flags (-race, say), and returns its path.
func Build(dir string, extra ...string) (string, error) {
	pkgDir, err := goOut("list", "-f", "{{.Dir}}", guardbinPkg)
	if err != nil {
		return "", err
	}
	goos, goarch, err := platform()
	if err != nil {
		return "", err
	}
	directive, err := Directive(filepath.Join(pkgDir, "doc.go"))
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, guardbin.File(goos, goarch))
	args, err := redirect(directive, goos, goarch, out, extra)
	if err != nil {
		return "", err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = pkgDir
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("guardtest: %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return out, nil
}

// Overlay writes into dir a go build -overlay file that puts prog where
// guardbin embeds the guard program, and returns its path.
func Overlay(dir, prog string) (string, error) {
	return overlay(dir, "guard-overlay.json", prog)
}

// overlay writes into dir, as name, a go build -overlay file that replaces
// the guard program guardbin embeds with prog ("": none), and returns its
// path.
func overlay(dir, name, prog string) (string, error) {
	pkgDir, err := goOut("list", "-f", "{{.Dir}}", guardbinPkg)
	if err != nil {
		return "", err
	}
	goos, goarch, err := platform()
	if err != nil {
		return "", err
	}
	target := filepath.Join(pkgDir, "bin", guardbin.File(goos, goarch))
	b, err := json.Marshal(map[string]map[string]string{"Replace": {target: prog}})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, b, 0o644)
}

// Absent writes into dir a go build -overlay file under which guardbin
// embeds no guard program, whatever go generate left in its bin/ (a
// plain go build of a fresh clone), and returns its path.
func Absent(dir string) (string, error) {
	return overlay(dir, "no-guard-overlay.json", "")
}

// Directive returns the words of the go:generate directive in file.
func Directive(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "//go:generate "); ok {
			return strings.Fields(rest), nil
		}
	}
	return nil, fmt.Errorf("guardtest: no go:generate directive in %s", file)
}

// redirect is directive with $GOOS and $GOARCH expanded, its output (-o)
// replaced by out, and extra flags added after "build" (with cgo for
// -race).
func redirect(directive []string, goos, goarch, out string, extra []string) ([]string, error) {
	o, b := slices.Index(directive, "-o"), slices.Index(directive, "build")
	if o < 0 || o+1 >= len(directive) || b < 0 {
		return nil, errors.New("guardtest: the go:generate directive is not a go build with -o")
	}
	args := make([]string, 0, len(directive)+len(extra))
	for _, w := range directive {
		if w == "CGO_ENABLED=0" && slices.Contains(extra, "-race") {
			w = "CGO_ENABLED=1" // the race detector needs cgo
		}
		args = append(args, os.Expand(w, func(v string) string {
			return map[string]string{"GOOS": goos, "GOARCH": goarch}[v]
		}))
	}
	args[o+1] = out
	return slices.Insert(args, b+1, extra...), nil
}

// platform is the GOOS and GOARCH go builds for here.
func platform() (goos, goarch string, err error) {
	s, err := goOut("env", "GOOS", "GOARCH")
	if err != nil {
		return "", "", err
	}
	f := strings.Fields(s)
	if len(f) != 2 {
		return "", "", fmt.Errorf("guardtest: go env GOOS GOARCH: %q", s)
	}
	return f[0], f[1], nil
}

// goOut runs the go command with args and returns its trimmed output.
func goOut(args ...string) (string, error) {
	b, err := exec.Command("go", args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("guardtest: go %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(b)), nil
}

// guardPkg is the guard's package, whose testdata holds the C programs.
const guardPkg = "github.com/tenure-dev/tenure/cmd/internal/guard"

// States compiles the guard's testdata/states/states.c with gcc into dir
// and returns the program's path: `states MODE OUT` puts one process of a
// command's tree in the state MODE names (a zombie leader whose threads
// run on, a disk sleep, a trace stop, …), writes its pid to OUT, and
// blocks until killed.
func States(dir string) (string, error) { return Program(dir, "states") }

// Program compiles the guard's testdata/NAME/NAME.c with gcc into dir and
// returns the program's path.
func Program(dir, name string) (string, error) {
	pkgDir, err := goOut("list", "-f", "{{.Dir}}", guardPkg)
	if err != nil {
		return "", err
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", fmt.Errorf("guardtest: %w: the guard's state tests build C programs (apt-get install gcc)", err)
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command(gcc, "-Wall", "-Werror", "-O", "-pthread", "-o", out, filepath.Join(pkgDir, "testdata", name, name+".c"))
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("guardtest: gcc %s.c: %w\n%s", name, err, b)
	}
	return out, nil
}
