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

	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// TestReviewWideNewWriter: a plain writer (no timer of its own, nothing
// undoes the freeze) that the guard never scouted: 2 s after the lease
// (26 s long) and the guard's scout on it, the writer the guard scouted
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
	for _, mode := range []string{"latewide", "widenew"} {
		t.Run(mode, func(t *testing.T) {
			hb := startHeartbeat(t, prog, mode, time.Minute, 26*time.Second)
			logLate(t, hb)
			r, ok := hb.g.report(reportWithin)
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
