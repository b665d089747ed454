package term

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/cmd/internal/guard"
)

// guardProbe is a command that writes, to $OUT, what its guard runs
// (/proc/PPID/exe), then what it has open as file descriptors 3, 4 and 5
// (those the guard itself finds open), one a line: nothing, unless the
// guard lets the command inherit them.
const guardProbe = `readlink /proc/$PPID/exe /proc/$$/fd/3 /proc/$$/fd/4 /proc/$$/fd/5 > "$OUT" || :`

// TestGuardProgram: in a binary built as a release is (tenureBin), the
// guard is the program embedded in tenure, run from memory: its
// executable is a memfd named tenure-guard; it initialises only the
// packages of cmd/tenure-guard (GODEBUG=inittrace=1), none of the rest of
// tenure; and the command inherits neither that program nor the guard's
// channels.
func TestGuardProgram(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	out := filepath.Join(t.TempDir(), "out")
	p := e2e.StartProc(t, "run", []string{"OUT=" + out, "GODEBUG=inittrace=1"},
		"run", "--endpoints", s.Endpoint, "--key", "program", "--", "sh", "-c", guardProbe)
	if code := p.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("tenure run exited %d; want 0", code)
	}
	lines := strings.Split(strings.TrimSpace(e2e.ReadFile(out)), "\n")
	if !strings.HasPrefix(lines[0], "/memfd:"+guard.Name) {
		t.Errorf("the guard runs %q; want the memfd %s", lines[0], guard.Name)
	}
	if len(lines) > 1 {
		t.Errorf("the command inherited %q from its guard as file descriptors 3-5; want none", lines[1:])
	}
	inits := initTraces(p.Err.String())
	if len(inits) != 2 {
		t.Fatalf("%d processes traced their package initialisation; want 2 (tenure, its guard):\n%s", len(inits), p.Err)
	}
	deps := goList(t, "-deps", "github.com/tenure-dev/tenure/cmd/tenure-guard")
	for _, pkg := range inits[1] {
		if !slices.Contains(deps, pkg) {
			t.Errorf("the guard initialised %s, which cmd/tenure-guard does not import", pkg)
		}
	}
	if !slices.Contains(inits[1], "github.com/tenure-dev/tenure/internal/boottime") {
		t.Errorf("the guard's initialisation %q lacks internal/boottime: not the guard's trace?", inits[1])
	}
}

// TestGuardFallback: a binary built without the guard program (a plain go
// build, without go generate) re-executes itself as the guard, says so at
// debug level, and runs the command as a release does.
func TestGuardFallback(t *testing.T) {
	t.Parallel()
	plain := filepath.Join(t.TempDir(), "tenure-plain")
	if err := e2e.BuildTenure(plain, false); err != nil {
		t.Fatal(err)
	}
	s := e2e.StartServer(t, t.TempDir())
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(plain, "run", "--log-level", "debug", "--endpoints", s.Endpoint, "--key", "fallback", "--",
		"sh", "-c", guardProbe+"; exit 3")
	cmd.Env = append(e2e.CleanEnv(), "OUT="+out)
	log, err := cmd.CombinedOutput()
	if code := e2e.ExitCodeOf(cmd.ProcessState); code != 3 {
		t.Fatalf("tenure run exited %d (%v); want 3, the command's:\n%s", code, err, log)
	}
	if !strings.Contains(string(log), "embeds no guard program") {
		t.Errorf("no debug line about the missing guard program:\n%s", log)
	}
	if guardExe := strings.SplitN(e2e.ReadFile(out), "\n", 2)[0]; guardExe != plain {
		t.Errorf("the guard runs %q; want the tenure binary %s", guardExe, plain)
	}
}

// initTraces splits a GODEBUG=inittrace=1 output into one list of
// initialised packages per process, in order (each process's trace begins
// with the runtime's first package).
func initTraces(stderr string) [][]string {
	var procs [][]string
	sc := bufio.NewScanner(strings.NewReader(stderr))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || f[0] != "init" || !strings.HasPrefix(f[2], "@") {
			continue
		}
		if f[1] == "internal/bytealg" || len(procs) == 0 {
			procs = append(procs, nil)
		}
		procs[len(procs)-1] = append(procs[len(procs)-1], f[1])
	}
	return procs
}

// goList runs go list with args (and -race when the tenure under test is
// race-built), and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	if e2e.TenureRace() {
		args = append([]string{"-race"}, args...)
	}
	b, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(b))
}
