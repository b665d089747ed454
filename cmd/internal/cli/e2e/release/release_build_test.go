package release

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

// releaseScript is the release build (docs/build.md, "Releasing").
const releaseScript = "../../../../../scripts/release-build.sh"

// TestReleaseBuild builds a snapshot release of linux/amd64 with
// scripts/release-build.sh, checks every archive against SHA256SUMS and
// holding tenure, LICENSE and README.md, then runs the tenure it holds:
// static, version names the snapshot and the embedded guard, and tenure run
// leads on a tenure server and runs its command. The other platforms
// (linux/arm64, darwin) take minutes to compile on a cold cache: the test
// checks that the script builds them by default, and builds this one only.
func TestReleaseBuild(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds tenure: not in -short")
	}
	script, err := os.ReadFile(releaseScript)
	if err != nil {
		t.Fatal(err)
	}
	defaults := regexp.MustCompile(`targets=\$\{TARGETS:-([^}]*)\}`).FindSubmatch(script)
	if defaults == nil {
		t.Fatalf("%s names no default TARGETS", releaseScript)
	}
	for _, p := range []string{"linux/amd64", "linux/arm64", "darwin/arm64"} {
		if !strings.Contains(" "+string(defaults[1])+" ", " "+p+" ") {
			t.Errorf("%s builds %q by default; want %s among them", releaseScript, defaults[1], p)
		}
	}

	dist := t.TempDir()
	build := exec.Command(releaseScript, "--snapshot", dist)
	build.Env = append(os.Environ(), "TARGETS=linux/amd64", "VERSION=v0.0.0-test")
	began := time.Now()
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", releaseScript, err, out)
	}
	t.Logf("release build: %s\n%s", time.Since(began).Round(time.Second), out)

	sums := checkSums(t, dist)
	name := "tenure_v0.0.0-test_linux_amd64"
	if _, ok := sums[name+".tar.gz"]; !ok || len(sums) != 1 {
		t.Fatalf("SHA256SUMS lists %v; want %s.tar.gz alone", sums, name)
	}
	bin := unpack(t, filepath.Join(dist, name+".tar.gz"), name, t.TempDir())

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter: not static (CGO_ENABLED=0)", bin)
		}
	}
	f.Close()

	version, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("tenure version: %v", err)
	}
	if v := string(version); !strings.HasPrefix(v, "tenure v0.0.0-test (") || !strings.Contains(v, "linux/amd64") || !strings.Contains(v, "guard: embedded") {
		t.Errorf("tenure version = %q; want v0.0.0-test on linux/amd64 with the guard embedded", v)
	}

	srv := e2e.StartServer(t, filepath.Join(t.TempDir(), "data"))
	defer srv.Stop(t)
	run := exec.Command(bin, append(append([]string{}, srv.Coord...), "run", "--key", "release/"+t.Name(), "--", "true")...)
	if out, err := run.CombinedOutput(); err != nil {
		t.Errorf("released tenure run -- true: %v; want exit 0\n%s", err, out)
	}
}

// checkSums checks every file SHA256SUMS in dist lists against its sum,
// and that it lists every archive there; it returns the names listed.
func checkSums(t *testing.T, dist string) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || strings.Contains(name, "/") {
			t.Fatalf("SHA256SUMS line %q; want SUM  NAME", sc.Text())
		}
		b, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: sha256 %x; SHA256SUMS says %s", name, got, sum)
		}
		listed[name] = true
	}
	archives, _ := filepath.Glob(filepath.Join(dist, "*.tar.gz"))
	for _, a := range archives {
		if !listed[filepath.Base(a)] {
			t.Errorf("SHA256SUMS does not list %s", filepath.Base(a))
		}
	}
	return listed
}

// unpack extracts archive, whose entries must be DIR/tenure, DIR/LICENSE
// and DIR/README.md, into into, and returns the path of tenure.
func unpack(t *testing.T, archive, dir, into string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var files []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		files = append(files, h.Name)
		name, ok := strings.CutPrefix(h.Name, dir+"/")
		if !ok || strings.Contains(name, "/") {
			t.Fatalf("%s holds %s; want files under %s/", archive, h.Name, dir)
		}
		out, err := os.OpenFile(filepath.Join(into, name), os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode)&0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, tr); err != nil {
			t.Fatal(err)
		}
		out.Close()
	}
	if want := []string{dir + "/LICENSE", dir + "/README.md", dir + "/tenure"}; strings.Join(files, " ") != strings.Join(want, " ") {
		t.Errorf("%s holds %q; want %q", archive, files, want)
	}
	return filepath.Join(into, "tenure")
}
