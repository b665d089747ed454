package guardbin_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/cmd/internal/guard/guardbin"
	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
)

// TestExecPath: a guard executes the descriptor tenure passes its program
// on.
func TestExecPath(t *testing.T) {
	if want := "/proc/self/fd/" + strconv.Itoa(guard.ExeFD); guardbin.ExecPath != want {
		t.Errorf("ExecPath = %q; want %q (guard.ExeFD)", guardbin.ExecPath, want)
	}
}

// TestProgramFresh: a guard program that go generate left in bin/ is the
// one the current sources build, so that a binary built from this tree
// does not embed a stale guard (run go generate again after changing the
// guard). Without one, Program says it is absent.
func TestProgramFresh(t *testing.T) {
	embedded, err := guardbin.Program()
	if errors.Is(err, guardbin.ErrAbsent) {
		t.Logf("no guard program generated into bin/ (%v): a plain build re-executes tenure as the guard", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	built, err := os.ReadFile(buildGuard(t))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(embedded, built) {
		t.Errorf("bin/%s (%d bytes) is not what the current sources build (%d bytes): run go generate ./cmd/internal/guard/guardbin",
			guardbin.File(runtime.GOOS, runtime.GOARCH), len(embedded), len(built))
	}
}

// TestLoad: the program loaded into memory is sealed, read-only, and runs
// as a guard when passed as guard.ExeFD and executed at ExecPath (here
// without arguments: the guard's usage error).
func TestLoad(t *testing.T) {
	f := loadGuard(t)
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE; seals&want != want {
		t.Errorf("seals = %#x; want %#x set", seals, want)
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Error("the loaded program is writable")
	}
	if link, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd()))); !strings.HasPrefix(link, "/memfd:"+guard.Name) {
		t.Errorf("the loaded program is %q; want a memfd named %s", link, guard.Name)
	}
	var stderr bytes.Buffer
	cmd := &exec.Cmd{Path: guardbin.ExecPath, Args: []string{guard.Name}, ExtraFiles: []*os.File{nil, nil, f}, Stderr: &stderr}
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "want PATH ARGV0") {
		t.Errorf("the guard from memory, without arguments: %v, stderr %q; want exit status 2 and its usage", err, stderr.String())
	}
}

// loadGuard builds the guard program (buildGuard) and loads it into
// memory, closed at the end of the test.
func loadGuard(t *testing.T) *os.File {
	t.Helper()
	prog, err := os.ReadFile(buildGuard(t))
	if err != nil {
		t.Fatal(err)
	}
	f, err := guardbin.LoadProgram(prog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// buildGuard builds the guard program by the go:generate directive.
func buildGuard(t *testing.T) string {
	t.Helper()
	prog, err := guardtest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return prog
}
