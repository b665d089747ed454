package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The packages whose build inputs decide the tenure binary BuildTenure
// builds: tenure itself and the guard program it embeds.
const (
	tenurePkg = "github.com/tenure-dev/tenure/cmd/tenure"
	guardProg = "github.com/tenure-dev/tenure/cmd/tenure-guard"
)

// builderPkgs are the packages that say how the binary is built (flags,
// overlay, the guard's go:generate directive is in guardbin, a dependency
// of tenure): a change to them changes the key too.
var builderPkgs = []string{
	"github.com/tenure-dev/tenure/cmd/internal/e2e",
	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest",
}

// keyEnv are the go env variables that change what go build makes. (Not
// all of go env: GOGCCFLAGS names a fresh temporary directory each time.)
var keyEnv = []string{
	"GOVERSION", "GOROOT", "GOOS", "GOARCH", "GOAMD64", "GOARM64", "GO386",
	"CGO_ENABLED", "CC", "CGO_CFLAGS", "CGO_LDFLAGS", "GOFLAGS", "GOEXPERIMENT", "GOWORK",
}

// listInputs prints one line per build input of each package that is not
// in the standard library (whose inputs GOROOT and GOVERSION stand for):
// "mod PATH@VERSION" for a package of a module in the module cache (whose
// content its version fixes, as go.sum checks), else "file PATH" for each
// file the build reads and the go.mod of its module.
const listInputs = `{{if not .Standard}}{{$d := .Dir}}` +
	`{{if and .Module .Module.Version (not .Module.Replace)}}mod {{.Module.Path}}@{{.Module.Version}}{{"\n"}}{{else}}` +
	`{{range .GoFiles}}file {{$d}}/{{.}}{{"\n"}}{{end}}` +
	`{{range .CgoFiles}}file {{$d}}/{{.}}{{"\n"}}{{end}}` +
	`{{range .CFiles}}file {{$d}}/{{.}}{{"\n"}}{{end}}` +
	`{{range .HFiles}}file {{$d}}/{{.}}{{"\n"}}{{end}}` +
	`{{range .SFiles}}file {{$d}}/{{.}}{{"\n"}}{{end}}` +
	`{{range .EmbedFiles}}file {{$d}}/{{.}}{{"\n"}}{{end}}` +
	`{{with .Module}}{{with .GoMod}}file {{.}}{{"\n"}}{{end}}{{end}}{{end}}{{end}}`

// SharedTenure returns the guarded tenure binary (BuildTenure(out, true))
// of this source tree, built once into a cache directory that every test
// process shares: the first to need it builds it while the others wait on
// a file lock, then all reuse it. The directory is named by BuildKey, so
// a change to anything the build reads builds a new binary; a build
// removes the cached binaries unused for cacheUnused.
func SharedTenure() (string, error) {
	key, err := BuildKey(buildFlags(), nil)
	if err != nil {
		return "", err
	}
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	dir := filepath.Join(root, "tenure-e2e-"+key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(dir, "lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	bin := filepath.Join(dir, "tenure")
	now := time.Now()
	if err := os.Chtimes(bin, now, now); err == nil { // in use: not pruned
		return bin, nil
	}
	prune(root, dir, cacheUnused)
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "tenure")
	if err := BuildTenure(out, true); err != nil {
		return "", err
	}
	// Renamed into place only once complete: a process that finds bin
	// (even one that takes no lock) finds the whole binary.
	return bin, os.Rename(out, bin)
}

// cacheUnused is how long a cached binary stays unused before a build of
// another removes it.
const cacheUnused = 3 * 24 * time.Hour

// prune removes the cached builds in root other than keep that have not
// been used (their binary's or, with none, their directory's modification
// time) for unused, and are not locked by a process building or finding
// them.
func prune(root, keep string, unused time.Duration) {
	dirs, _ := filepath.Glob(filepath.Join(root, "tenure-e2e-*"))
	for _, dir := range dirs {
		fi, err := os.Stat(filepath.Join(dir, "tenure"))
		if err != nil {
			fi, err = os.Stat(dir)
		}
		if dir == keep || err != nil || time.Since(fi.ModTime()) < unused {
			continue
		}
		f, err := os.Open(filepath.Join(dir, "lock"))
		if err == nil && syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(dir)
		}
		if f != nil {
			f.Close()
		}
	}
}

// lockFile takes an exclusive lock on path (created if need be), waiting
// for another process's, and returns its release.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}

// RaceTenure says whether the tenure binary that a package's tests start
// is built with -race when the tests are: set it in TestMain, before Main.
// A race-built tenure costs about three times the CPU of a plain one to
// start, and the end-to-end tests start thousands, so only the packages
// whose tests drive the concurrent code of tenure run and its guard
// hardest (e2e/run, e2e/term) set it; the race detector runs on the rest of
// that code in the in-process tests of cmd/internal/cli and the guard.
var RaceTenure bool

// TenureRace reports whether the tenure binary under test is race-built.
func TenureRace() bool { return RaceEnabled && RaceTenure }

// buildFlags are the go build flags BuildTenure passes.
func buildFlags() []string {
	if TenureRace() {
		return []string{"-race"}
	}
	return nil
}

// BuildKey returns a hash of everything that decides the binary
// BuildTenure(out, true) builds with the go build flags: those flags, the
// go toolchain and its environment, and the content of every file the
// builds of tenure and of its guard program read (outside the standard
// library), of the workspace's go.work and go.sum files, and of the
// packages that run the builds. overlay is as go build's -overlay Replace
// map (a file's path to the path of its replacement content), nil for the
// source tree as it is.
func BuildKey(flags []string, overlay map[string]string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "tenure-e2e build key 1\nflags %q\n", flags)
	env, err := goCmd(append([]string{"env"}, keyEnv...)...)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "env %q\n", env)
	inputs, err := keyInputs(flags, overlay)
	if err != nil {
		return "", err
	}
	for _, in := range inputs {
		f, ok := strings.CutPrefix(in, "file ")
		if !ok {
			fmt.Fprintln(h, in)
			continue
		}
		if err := hashFile(h, f, overlay); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// keyInputs lists, sorted, the inputs (listInputs) BuildKey hashes.
func keyInputs(flags []string, overlay map[string]string) ([]string, error) {
	var list []string
	if len(overlay) > 0 {
		dir, err := os.MkdirTemp("", "tenure-e2e-key-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		b, err := json.Marshal(map[string]map[string]string{"Replace": overlay})
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return nil, err
		}
		list = append(list, "-overlay", path)
	}
	list = append(append([]string{"list", "-f", listInputs}, flags...), list...)
	deps, err := goCmd(append(append(list, "-deps"), tenurePkg, guardProg)...)
	if err != nil {
		return nil, err
	}
	own, err := goCmd(append(list, builderPkgs...)...)
	if err != nil {
		return nil, err
	}
	inputs := strings.Split(deps+"\n"+own, "\n")
	if work, err := goCmd("env", "GOWORK"); err == nil && work != "" && work != "off" {
		inputs = append(inputs, "file "+work, "file "+work+".sum")
	}
	for _, in := range inputs {
		if f, ok := strings.CutPrefix(in, "file "); ok && filepath.Base(f) == "go.mod" {
			inputs = append(inputs, "file "+strings.TrimSuffix(f, ".mod")+".sum")
		}
	}
	slices.Sort(inputs)
	return slices.DeleteFunc(slices.Compact(inputs), func(s string) bool { return s == "" }), nil
}

// hashFile writes path and its content (as overlay has it) to h; a file
// that does not exist (a go.sum, say) is hashed as absent.
func hashFile(h io.Writer, path string, overlay map[string]string) error {
	src := path
	if r, ok := overlay[path]; ok {
		src = r
	}
	f, err := os.Open(src)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(h, "absent %q\n", path)
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	fmt.Fprintf(h, "file %q %d\n", path, fi.Size())
	_, err = io.Copy(h, f)
	return err
}

// goCmd runs the go command with args and returns its trimmed output.
func goCmd(args ...string) (string, error) {
	b, err := exec.Command("go", args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(b)), nil
}
