package guard_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
)

// A stateCase is a state a process of the command's tree can be in, made
// by states.c's mode of the same name. made says what is missing for the
// state to be made (the process in it is key, the command main, the
// guard g), or "" once it is.
type stateCase struct {
	mode string
	made func(key, main, g int) string
	// exits: the command exits when told to (states.c's OUT.exit), and
	// what it leaves is the guard's to end: that is the only trigger.
	exits bool
}

var stateCases = []stateCase{
	{mode: "running", made: stateIs("R")},
	{mode: "sleeping", made: stateIs("S")},
	{mode: "disk", made: stateIs("D")}, // the parent of a CLONE_VFORK child
	{mode: "stopped", made: stateIs("T")},
	{mode: "traced", made: stateIs("t")}, // by its own child
	{mode: "zleader", made: zombieLeader},
	{mode: "zleader-orphan", made: zombieLeader, exits: true}, // the command's child
	{mode: "zombie", made: func(key, main, g int) string {
		f, m := statFields(key), statFields(main)
		if f == nil || m == nil || f[0] != "Z" || threads(key) != 1 || f[1] != strconv.Itoa(main) || m[0] != "S" {
			return "a zombie its living parent, the command, does not reap"
		}
		return ""
	}},
	{mode: "setsid", made: func(key, main, g int) string {
		if f := statFields(key); f == nil || f[3] != strconv.Itoa(key) {
			return "a session of its own"
		}
		return ""
	}},
	{mode: "setpgid", made: func(key, main, g int) string {
		f, m := statFields(key), statFields(main)
		if f == nil || m == nil || f[2] != strconv.Itoa(key) || f[3] != m[3] {
			return "a process group of its own in the command's session"
		}
		return ""
	}},
	{mode: "orphan", made: func(key, main, g int) string {
		if f := statFields(key); f == nil || f[1] != strconv.Itoa(g) || key == main {
			return "a grandchild reparented to the guard"
		}
		return ""
	}},
	{mode: "reexec", made: func(key, main, g int) string {
		argv, _ := os.ReadFile("/proc/" + strconv.Itoa(key) + "/cmdline")
		if key != main || !strings.Contains(string(argv), "\x00sleeping\x00") {
			return "the command re-executed (execve) as states sleeping"
		}
		return ""
	}},
	{mode: "clone0", made: func(key, main, g int) string {
		if f := statFields(key); f == nil || f[0] != "S" || f[1] != strconv.Itoa(main) {
			return "the command's child, made by clone with no exit signal"
		}
		return ""
	}},
	{mode: "termfork", made: stateIs("S")}, // forks a new session at each SIGTERM
	{mode: "threads", made: func(key, main, g int) string {
		if n := threads(key); n != 65 {
			return fmt.Sprintf("65 threads (has %d)", n)
		}
		return ""
	}},
	{mode: "threadkids", made: func(key, main, g int) string {
		f, m := statFields(key), statFields(main)
		kids, _ := guard.Descendants("/proc", main)
		if f == nil || m == nil || f[1] != strconv.Itoa(main) || m[0] != "Z" || threads(main) != 2 || len(kids) != 2 {
			return "two children of the command, a zombie leader, on the list of its other thread"
		}
		return ""
	}},
}

// stateIs: the process is in state s.
func stateIs(s string) func(key, main, g int) string {
	return func(key, main, g int) string {
		if f := statFields(key); f == nil || f[0] != s {
			return "state " + s
		}
		return ""
	}
}

// zombieLeader: the process shows as a zombie while two threads run on.
func zombieLeader(key, main, g int) string {
	if f := statFields(key); f == nil || f[0] != "Z" || threads(key) != 3 {
		return "a zombie leader (Z) with its two threads running"
	}
	return ""
}

// threads is how many threads /proc/PID/task lists.
func threads(pid int) int {
	tids, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	return len(tids)
}

// A stateTrigger is what tells the guard to kill the tree.
type stateTrigger struct {
	name  string
	grace time.Duration // the guard's --kill-grace
	do    func(t *testing.T, g *guardProc, out string)
	// expired: the guard kills on its own (Report.Expired, Killed).
	expired bool
}

var stateTriggers = []stateTrigger{
	{name: "deadline", grace: time.Minute, do: func(t *testing.T, g *guardProc, out string) { g.lease(t, 200*time.Millisecond) }, expired: true},
	{name: "control EOF", grace: time.Minute, do: func(t *testing.T, g *guardProc, out string) { g.closeControl() }, expired: true},
	{name: "SIGTERM", grace: 300 * time.Millisecond, do: func(t *testing.T, g *guardProc, out string) {
		g.send(t, guard.Message{Op: guard.OpEnd, Signal: syscall.SIGTERM})
	}},
}

// exitTrigger: the command exits, leaving the rest of its tree; the guard
// sends it SIGTERM, and SIGKILL after the grace.
var exitTrigger = stateTrigger{name: "command exits", grace: 300 * time.Millisecond, do: func(t *testing.T, g *guardProc, out string) {
	if err := os.WriteFile(out+".exit", nil, 0o644); err != nil {
		t.Fatal(err)
	}
}}

// reportWithin bounds how long the guard may take to report the tree gone
// once told to kill it: liveness slack for a loaded machine, not a speed.
const reportWithin = 20 * time.Second

// TestGuardStates: whatever state each process of the command's tree is
// in, a guard told that the deadline passed, that tenure went away (end of
// file on its control channel), or to end the term with SIGTERM and a kill grace (or
// whose command exits, leaving a zombie leader whose threads run on),
// kills every process of the tree and reports the tree gone only once
// every thread of every one of them has exited.
func TestGuardStates(t *testing.T) {
	prog, err := guardtest.States(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range stateCases {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			triggers := stateTriggers
			if c.exits {
				triggers = []stateTrigger{exitTrigger}
			}
			for _, tr := range triggers {
				t.Run(tr.name, func(t *testing.T) { testGuardState(t, prog, c, tr) })
			}
		})
	}
}

func testGuardState(t *testing.T, prog string, c stateCase, tr stateTrigger) {
	out := filepath.Join(t.TempDir(), "out")
	g := startGuard(t, tr.grace, nil, nil, prog, "states", c.mode, out)
	g.lease(t, time.Minute)
	started, ok := g.report(reportWithin)
	if !ok || started.Pid == 0 {
		t.Fatalf("the guard did not start the command: %+v", started)
	}
	held := pidfds{}
	t.Cleanup(held.kill)
	held.hold(t, []guard.Proc{{Pid: started.Pid}})
	key, why := awaitState(t, g, c, out, started.Pid, held)
	if why != "" {
		t.Fatalf("state not made within %s: want %s; process %d: %q", reportWithin, why, key, statFields(key))
	}
	procs, err := guard.Descendants("/proc", g.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	held.hold(t, append(procs, guard.Proc{Pid: key}))
	checkFamily(t, g.cmd.Process.Pid)
	tr.do(t, g, out)
	told := time.Now()
	r, ok := g.report(reportWithin)
	held.hold(t, procsOf(out, g.cmd.Process.Pid)) // new ones too (termfork)
	left := held.alive()
	t.Logf("reported %s after the %s", time.Since(told).Round(time.Millisecond), tr.name)
	if !ok {
		t.Fatalf("no report within %s of the %s; alive: %s", reportWithin, tr.name, describe(left))
	}
	if len(left) > 0 {
		t.Errorf("the guard reported %+v while %d process(es) of the tree lived: %s", r, len(left), describe(left))
	}
	if !r.Exited || tr.expired && (!r.Killed || !r.Expired) {
		t.Errorf("report %+v; want exited (and killed, expired: %v)", r, tr.expired)
	}
}

// checkFamily checks that guard.Family, which the guard's walk uses, finds
// under the guard (pid g) the processes guard.Descendants finds, no more
// and no fewer, once two readings of Descendants on either side of it
// agree (the tree is at rest).
func checkFamily(t *testing.T, g int) {
	t.Helper()
	pids := func(procs []guard.Proc, err error) []int {
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, p := range procs {
			out = append(out, p.Pid)
		}
		slices.Sort(out)
		return out
	}
	var fast, before []int
	for range 10 {
		before = pids(guard.Descendants("/proc", g))
		fast = pids(guard.Family("/proc", g))
		if slices.Equal(before, pids(guard.Descendants("/proc", g))) {
			if !slices.Equal(fast, before) {
				t.Errorf("the children lists show the tree as %v; every process's stat line, as %v", fast, before)
			}
			return
		}
	}
	t.Errorf("the tree never at rest across two readings of /proc in 10 tries; last %v", before)
}

// awaitState waits for states.c to write the pid of the process in its
// state to out, then for the state to be made, and returns that pid and
// what is missing ("" once made). It fails the test if the guard reports
// first.
func awaitState(t *testing.T, g *guardProc, c stateCase, out string, main int, held pidfds) (key int, why string) {
	t.Helper()
	why = "its pid written to " + out
	for began := time.Now(); time.Since(began) < reportWithin; time.Sleep(10 * time.Millisecond) {
		select {
		case r := <-g.reports:
			t.Fatalf("the guard reported %+v before the state was made (want %s); alive then: %s", r, why, describe(held.alive()))
		default:
		}
		if key == 0 {
			b, err := os.ReadFile(out)
			if key, _ = strconv.Atoi(strings.TrimSpace(string(b))); err != nil || key == 0 {
				continue
			}
			held.hold(t, []guard.Proc{{Pid: key}})
		}
		if why = c.made(key, main, g.cmd.Process.Pid); why == "" {
			return key, ""
		}
	}
	return key, why
}

// describe names each pid's state and thread count.
func describe(pids []int) string {
	var b strings.Builder
	for _, pid := range pids {
		state := "?"
		if f := statFields(pid); f != nil {
			state = f[0]
		}
		fmt.Fprintf(&b, "; pid %d (state %s, %d thread(s))", pid, state, threads(pid))
	}
	return strings.TrimPrefix(b.String(), "; ")
}

// procsOf returns the processes but except (the guard) that have out as
// an argument: states.c's, those it started after the test last walked
// the tree among them.
func procsOf(out string, except int) []guard.Proc {
	var procs []guard.Proc
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, name := range names {
		argv, _ := os.ReadFile(name)
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(name)))
		if pid != except && slices.Contains(strings.Split(string(argv), "\x00"), out) {
			procs = append(procs, guard.Proc{Pid: pid})
		}
	}
	return procs
}
