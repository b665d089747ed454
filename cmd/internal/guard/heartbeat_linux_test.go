package guard_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// TestGuardHeartbeat: a process of the command's tree that writes the boot
// clock to a file every 200 µs, in a process group of its own (plain), as
// pid 2 of a user and PID namespace of its own (userns), or ignoring
// SIGTERM while it sends the guard SIGTERM every 50 ms under a kill grace
// of a minute (termguard: the grace never runs past the deadline), or
// undoing the freeze with SIGCONT from a POSIX timer of its own every
// millisecond (contimer), writes nothing at or after the lease's deadline
// (the guard freezes the tree before it, and kills it its lead, killLead,
// before it: the kill lands before the deadline), and nothing after the
// guard reported the tree gone.
// The termguard writer sends its SIGTERMs only once the guard has applied
// the lease whose deadline the test watches (the lease file says so): a
// SIGTERM before that ends the term under the minute-long lease the
// command started with, and the guard rightly ignores the renewal after
// it (a lease that ended is never revived), keeping that deadline.
func TestGuardHeartbeat(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "heartbeat")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"plain", "userns", "termguard", "contimer"} {
		// One at a time: each writer keeps a core busy, and the freeze
		// comes only 100 ms before the deadline.
		t.Run(mode, func(t *testing.T) {
			hb := startHeartbeat(t, prog, mode, time.Minute, heartbeatDeadline)
			r, ok := hb.g.report(reportWithin)
			reported := boottime.Now()
			if !ok {
				t.Fatalf("no report within %s of the deadline; alive: %s", reportWithin, describe(hb.held.alive()))
			}
			hb.checkBeats(t, r, reported)
			if _, err := os.Stat(hb.out + ".sigterm"); mode == "termguard" && err != nil {
				t.Errorf("the writer never sent the guard SIGTERM before the deadline: %v", err)
			}
		})
	}
}

// TestGuardHeartbeatShortestTTL: the freeze dodger of TestGuardHeartbeat
// (contimer: its own timer sends it SIGCONT every ms) under the shortest
// lease tenure run accepts (MinTTL, 1 s), whose kill lead is a fortieth
// of the TTL, 25 ms, and its freeze lead 50 ms. The writer must write
// nothing at or after the deadline. Under a 100 ms TTL (a kill lead of
// 2.5 ms), which tenure run accepted before, it wrote 1.9-5.6 ms after it
// in 4 of 10 runs (load average 2.5 on two cores); under 400 ms (10 ms),
// within 2 ms of the deadline in at least 5 of 20 runs beside two busy loops, and
// after it in 2 runs on a host loaded further.
func TestGuardHeartbeatShortestTTL(t *testing.T) {
	testHeartbeatTTL(t, guard.MinTTL.Milliseconds())
}

// testHeartbeatTTL runs heartbeat contimer under a guard, renews its lease
// with the same deadline and a TTL of ttlMs, and checks the writer's beats.
func testHeartbeatTTL(t *testing.T, ttlMs int64) {
	prog, err := guardtest.Program(t.TempDir(), "heartbeat")
	if err != nil {
		t.Fatal(err)
	}
	hb := startHeartbeat(t, prog, "contimer", time.Minute, heartbeatDeadline)
	l := guard.Lease{Key: "k", Holder: "h", Token: 1, Deadline: hb.deadline, TTLMs: ttlMs, Live: true}
	hb.g.send(t, guard.Message{Op: guard.OpLease, Lease: &l})
	r, ok := hb.g.report(reportWithin)
	reported := boottime.Now()
	if !ok {
		t.Fatalf("no report within %s of the deadline; alive: %s", reportWithin, describe(hb.held.alive()))
	}
	t.Logf("kill due %s before the deadline", hb.deadline.Sub(guard.KillAt(l)))
	hb.checkBeats(t, r, reported)
}

// TestGuardHeartbeatTerm: the term ended with SIGTERM and a kill grace
// (tenure's stop, or a SIGTERM to the guard) gives the writer, in a
// process group of its own, its SIGTERM: it exits on it, before the guard
// reports.
func TestGuardHeartbeatTerm(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "heartbeat")
	if err != nil {
		t.Fatal(err)
	}
	testHeartbeatTerm(t, prog, "plain")
}

// testHeartbeatTerm ends the term of heartbeat MODE with SIGTERM and a
// kill grace of 2 s, and checks the writer got the SIGTERM.
func testHeartbeatTerm(t *testing.T, prog, mode string) {
	hb := startHeartbeat(t, prog, mode, 2*time.Second, time.Minute)
	hb.g.send(t, guard.Message{Op: guard.OpEnd, Signal: syscall.SIGTERM})
	r, ok := hb.g.report(reportWithin)
	if !ok {
		t.Fatalf("no report within %s of the SIGTERM; alive: %s", reportWithin, describe(hb.held.alive()))
	}
	if _, err := os.Stat(hb.out + ".term"); err != nil {
		t.Errorf("the guard reported %+v, but the writer never got the SIGTERM that ends the term: %v", r, err)
	}
	if left := hb.held.alive(); len(left) > 0 {
		t.Errorf("the guard reported %+v while %s of the tree lived", r, describe(left))
	}
}

// heartbeat is heartbeat.c's writer under a guard.
type heartbeat struct {
	g        *guardProc
	out      string
	deadline boottime.Instant // the lease's
	held     pidfds           // the tree's processes, as the test saw them
}

// heartbeatDeadline is how long after the writer's first beat the lease's
// deadline is: the guard freezes the tree 100 ms before it (a TTL of 2 s).
const heartbeatDeadline = 500 * time.Millisecond

// startHeartbeat runs heartbeat MODE under a guard with kill grace grace,
// waits for the writer's first beat, and gives the guard a lease whose
// deadline is d away.
func startHeartbeat(t *testing.T, prog, mode string, grace, d time.Duration) *heartbeat {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	g := startGuard(t, grace, nil, nil, prog, "heartbeat", mode, out)
	g.lease(t, time.Minute)
	started, ok := g.report(reportWithin)
	if !ok || started.Pid == 0 {
		t.Fatalf("the guard did not start the command: %+v", started)
	}
	hb := &heartbeat{g: g, out: out, held: pidfds{}}
	t.Cleanup(hb.held.kill)
	hb.held.hold(t, []guard.Proc{{Pid: started.Pid}})
	hb.held.hold(t, []guard.Proc{{Pid: awaitInt(t, out)}})
	awaitInt(t, out+".beat")
	procs, err := guard.Descendants("/proc", g.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	hb.held.hold(t, procs)
	hb.deadline = boottime.Now().Add(d)
	l := guard.Lease{Key: "k", Holder: "h", Token: 1, Deadline: hb.deadline, TTLMs: 2000, Live: true}
	g.send(t, guard.Message{Op: guard.OpLease, Lease: &l})
	return hb
}

// lastBeat is the boot clock instant the writer wrote last.
func (hb *heartbeat) lastBeat() boottime.Instant {
	return boottime.Instant(readInt(hb.out + ".beat"))
}

// checkBeats checks, once the guard has reported r at reported, that the
// writer wrote nothing at or after the deadline, nor after the report (it
// looks again 300 ms later), and that nothing of the tree lives.
func (hb *heartbeat) checkBeats(t *testing.T, r guard.Report, reported boottime.Instant) {
	t.Helper()
	last := hb.lastBeat()
	t.Logf("reported %s after the deadline; last beat at the deadline %+v", reported.Sub(hb.deadline).Round(time.Millisecond), last.Sub(hb.deadline).Round(time.Millisecond))
	if left := hb.held.alive(); len(left) > 0 {
		t.Errorf("the guard reported %+v while %s of the tree lived", r, describe(left))
	}
	if last >= hb.deadline {
		t.Errorf("the writer wrote %s after the lease's deadline (the guard reported %+v %s after it)",
			last.Sub(hb.deadline).Round(time.Microsecond), r, reported.Sub(hb.deadline).Round(time.Millisecond))
	}
	time.Sleep(300 * time.Millisecond)
	if later := hb.lastBeat(); later > last {
		t.Errorf("the writer wrote %s after the guard reported %+v", later.Sub(reported).Round(time.Microsecond), r)
	}
	if !r.Killed || !r.Expired {
		t.Errorf("report %+v; want killed, expired", r)
	}
}
