package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
	"github.com/tenure-dev/tenure/cmd/internal/testparallel"
	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/internal/raceexit"
)

// TenureBin is the tenure binary built for the end-to-end tests.
var TenureBin string

// pg is the PostgreSQL server of the tests that need one, started by the
// first of them (most packages of end-to-end tests need none).
var pg pgtest.Lazy

// Postgres returns the package's PostgreSQL server, started by the first
// test that needs it, or ends t as pgtest.Need does when there is none.
func Postgres(t testing.TB) *pgtest.Server {
	t.Helper()
	return pg.Need(t)
}

// SelfBin is this test binary: re-executed in a helper mode, it is the
// command that "tenure run" runs in the end-to-end tests.
var SelfBin string

// Main is the TestMain of a package of end-to-end tests: run as a
// helper command (ChildMain, with the package's own modes in more) when
// the test binary is one, else build tenure and run the tests (BuildThen).
func Main(m *testing.M, more ...func(mode string) (code int, ok bool)) int {
	raceexit.Quick() // tenure and this binary, run again, exit at once
	if mode := os.Getenv(ChildModeEnv); mode != "" {
		return ChildMain(mode, more...)
	}
	return BuildThen(m)
}

// Parallel, when set in TestMain before Main, is how many tests of the
// package run at once (those that call t.Parallel) unless go test is given
// -parallel; 0 leaves go test's default, GOMAXPROCS. The end-to-end tests
// spend most of their time waiting on real TTLs and on the processes they
// start, not on the CPU, so a package of them can run more tests at once
// than the machine has cores.
var Parallel int

// BuildThen builds the tenure binary, or finds it already built by another
// test process (SharedTenure), and runs the tests with a goroutine-leak
// check.
func BuildThen(m *testing.M) int {
	flag.Parse()
	if err := testparallel.Set(Parallel); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	began := time.Now()
	var err error
	if TenureBin, err = SharedTenure(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "built or found %s in %s\n", TenureBin, time.Since(began).Round(time.Millisecond))
	}
	if SelfBin, err = os.Executable(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := pg.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: stop: %v\n", err)
	}
	if code == 0 {
		// As goleak.VerifyTestMain, once the server is stopped.
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	return code
}

// BuildTenure builds the tenure binary into out: as a release is built,
// with the guard's own program embedded (guardtest), when guarded; as a
// plain go build of a fresh clone, whose guard re-executes tenure,
// otherwise (even when go generate has left a program in the source tree).
// When TenureRace, both tenure and its guard run under the race detector.
func BuildTenure(out string, guarded bool) error {
	flags := buildFlags()
	args := append([]string{"build", "-o", out}, flags...)
	overlay, err := guardtest.Absent(filepath.Dir(out))
	if guarded {
		var prog string
		if prog, err = guardtest.Build(filepath.Dir(out), flags...); err == nil {
			overlay, err = guardtest.Overlay(filepath.Dir(out), prog)
		}
	}
	if err != nil {
		return err
	}
	args = append(args, "-overlay", overlay)
	build := exec.Command("go", append(args, "github.com/tenure-dev/tenure/cmd/tenure")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build tenure: %w", err)
	}
	return nil
}
