//go:build linux && openfinding

// Open findings of the fresh review of the freeze and the kill of wide
// trees (review-wide, after 0600ef4). Run them one at a time (each keeps a
// core busy and forks 3,000 processes) from cmd/ with
//
//	go test -tags openfinding -count=1 -v -run 'TestReviewWideNewWriter/latewide$' ./internal/guard/
//
// (HEARTBEAT_WIDE=N in the environment sets the wide tree's size.)

package guard_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// TestReviewWideNewWriter: a plain writer (no timer of its own, nothing
// undoes the freeze) that the guard never scouted: 3 s after the lease
// (27 s long) and the guard's scout on it, the writer the guard scouted
// forks a new writer, which starts a process group of its own and
// writes in its place, and sleeps. No scouted process is in the new
// writer's group, which it leads, and it is no child of the guard: only a
// reading of /proc (the freeze's walk, then the kill's) finds it, after
// the whole tree is read. latewide: the tree is wide only after the last
// renewal (the old writer forks 3,000 sleepers, in its group, before the
// new writer: 2-10 s for 3,000 forks on two cores), so the scout took little and the freeze comes 100 ms
// before the deadline; widenew: the 3,000 sleepers were there at the
// scout, which took long, so the freeze comes up to 200 ms before the
// deadline, but it skips its walk when the kill would fall due within the
// last walk's time, and the new writer is then left to the kill's walk.
// The writer must write nothing at or after the deadline.
func TestReviewWideNewWriter(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "heartbeat")
	if err != nil {
		t.Fatal(err)
	}
	if n := os.Getenv("HEARTBEAT_WIDE"); n != "" {
		t.Logf("HEARTBEAT_WIDE=%s", n)
	}
	for _, tc := range []struct {
		name, mode string
		ttlMs      int64
	}{{"latewide", "latewide", 2000}, {"widenew", "widenew", 2000}, {"latewide10s", "latewide", 10000}, {"widenew10s", "widenew", 10000}} {
		t.Run(tc.name, func(t *testing.T) {
			hb := startHeartbeat(t, prog, tc.mode, time.Minute, 27*time.Second)
			if tc.ttlMs != 2000 {
				l := guard.Lease{Key: "k", Holder: "h", Token: 1, Deadline: hb.deadline, TTLMs: tc.ttlMs, Live: true}
				hb.g.send(t, guard.Message{Op: guard.OpLease, Lease: &l})
			}
			logLate(t, hb)
			r, ok := hb.g.report(hb.deadline.Sub(boottime.Now()) + reportWithin)
			reported := boottime.Now()
			if !ok {
				t.Fatalf("no report within %s of the deadline; alive: %d processes", reportWithin, len(hb.held.alive()))
			}
			hb.checkBeats(t, r, reported)
		})
	}
}

// logLate waits for the new writer of latewide and widenew (its pid in
// OUT.late) and logs when it came, its process group, and whether the
// guard holds a pidfd for it (scouted it: it must not have).
func logLate(t *testing.T, hb *heartbeat) int {
	t.Helper()
	w := awaitInt(t, hb.out+".late")
	seen := hb.deadline.Sub(boottime.Now())
	f := statFields(w)
	if f == nil {
		t.Fatalf("the new writer %d is gone", w)
	}
	scouted := holdsPidfd(hb.g.cmd.Process.Pid, w)
	t.Logf("the new writer %d (ppid %s, group %s) seen %s before the deadline; the guard holds a pidfd for it: %v",
		w, f[1], f[2], seen.Round(time.Millisecond), scouted)
	if seen < 500*time.Millisecond || scouted || f[2] != strconv.Itoa(w) {
		t.Fatalf("not the tree wanted: the new writer came %s before the deadline (want it before the freeze), scouted %v, in group %s", seen.Round(time.Millisecond), scouted, f[2])
	}
	return w
}

// TestReviewWideGroupsPlain: a plain writer the guard scouted, the last of
// 3,001 processes each in a process group of its own (heartbeat
// groupsplain: 3,000 sleepers, then the writer, forked by one process).
// The freeze signals the group of each scouted process, in the order the
// scout found them, with no look at the clock between them: the writer's
// group comes last. The writer must write nothing at or after the
// deadline.
func TestReviewWideGroupsPlain(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "heartbeat")
	if err != nil {
		t.Fatal(err)
	}
	hb := startHeartbeat(t, prog, "groupsplain", time.Minute, 3*time.Second)
	writer := readInt(hb.out)
	f := statFields(writer)
	if f == nil || f[2] != strconv.Itoa(writer) {
		t.Fatalf("the writer %d does not lead its group: stat %v", writer, f)
	}
	logScouted(t, hb, writer)
	r, ok := hb.g.report(reportWithin)
	reported := boottime.Now()
	if !ok {
		t.Fatalf("no report within %s of the deadline; alive: %d processes", reportWithin, len(hb.held.alive()))
	}
	hb.checkBeats(t, r, reported)
}

// TestReviewWideSlowScout: the guard scouts the tree when a lease comes,
// before it looks at the clock again. Under `--ttl 2s` and the default
// `--margin 1s`, a renewal's local deadline is about 1 s after it was
// sent (sent here 1 s before the deadline, TTL 2 s), and the scout of a
// tree of 3,001 processes takes most of that: the freeze, due 200 ms
// before the deadline (the scout took long), comes only once the scout is
// over. lastplain: the plain writer is the last of 3,001 processes of a
// group that its leader keeps (the control of TestReviewGroupsLeaderless,
// frozen 94-99 ms before the deadline given 3 s); groupsplain: the writer
// leads the last of 3,001 groups (see TestReviewWideGroupsPlain). The
// writer must write nothing at or after the deadline.
func TestReviewWideSlowScout(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "heartbeat")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"lastplain", "groupsplain"} {
		t.Run(mode, func(t *testing.T) {
			hb := startHeartbeat(t, prog, mode, time.Minute, time.Second)
			r, ok := hb.g.report(reportWithin)
			reported := boottime.Now()
			if !ok {
				t.Fatalf("no report within %s of the deadline; alive: %d processes", reportWithin, len(hb.held.alive()))
			}
			hb.checkBeats(t, r, reported)
		})
	}
}
