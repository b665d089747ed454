//go:build linux && openfinding

// Open finding of the review of the kill's lead (issue 34): a process of
// a wide tree that undoes the freeze with SIGCONT of its own (heartbeat
// contimer) writes after the lease's deadline. Run it (it keeps a core
// busy) from cmd/ with
//
//	go test -tags openfinding -count=1 -v -run 'TestReviewKillLeadWide$' ./internal/guard/
//
// (HEARTBEAT_WIDE=N in the environment sets the wide tree's size.)
//
// It fails, mostly. The kill cannot be
// sent while the guard is still in the freeze, which signals the scouted
// processes and then reads /proc (the tree's children lists, then every
// process of the host) before tick returns; a kill that falls due during
// that read waits for its end, and the dodger writes meanwhile.

// Since the freeze and the kill signal the group each scouted process is
// in, and a tree that took long to scout is frozen earlier (state's
// freezeAt), these pass when run alone (3 of 3 each on two cores); run two
// at a time (6,000 processes), leaderless wrote 349 ms and contimerlast
// 231 ms after the deadline, once each in 3 runs. TestReviewGroupsHop's
// hop now sometimes comes after the earlier freeze, which the test then
// reports ("no hop before the freeze") rather than judging.

package guard_test

import (
	"os"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// TestReviewKillLeadWide: the freeze dodger of TestGuardHeartbeat (contimer) with
// 3000 sleeping processes beside it in the tree, under the lease of
// startHeartbeat (TTL 2 s: the freeze 100 ms before the deadline, the kill
// 50 ms before it), given 3 s before the deadline (the scout on it, which
// took 640 ms for such a tree, is over long before the freeze). The writer
// must write nothing at or after the deadline. It wrote 300-460 ms after
// it: the freeze's reading of 3000 processes (walk 400 ms, sweep 210 ms,
// signal(SIGSTOP) 1.29 s in all, measured) holds the kill back, and the
// kill's own SIGKILL to the 3000 scouted processes took 1.2 s. With 1000
// processes it wrote 63-77 ms after the deadline (2 of 2 runs), with 300
// 0.26 ms after it in 1 of 2.
func TestReviewKillLeadWide(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "heartbeat")
	if err != nil {
		t.Fatal(err)
	}
	if n := os.Getenv("HEARTBEAT_WIDE"); n != "" {
		t.Logf("HEARTBEAT_WIDE=%s", n)
	}
	for _, mode := range []string{"contimerwide", "contimerlast"} {
		t.Run(mode, func(t *testing.T) {
			hb := startHeartbeat(t, prog, mode, time.Minute, 3*time.Second)
			r, ok := hb.g.report(reportWithin)
			reported := boottime.Now()
			if !ok {
				t.Fatalf("no report within %s of the deadline; alive: %d processes", reportWithin, len(hb.held.alive()))
			}
			hb.checkBeats(t, r, reported)
		})
	}
}
