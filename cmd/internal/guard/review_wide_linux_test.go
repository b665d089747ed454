//go:build linux

// The fresh review of the freeze and the kill of wide trees (review-wide,
// after 0600ef4): the attacks the guard holds against. Its open findings
// are in review_wide_open_linux_test.go.

package guard_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
)

// TestReviewWidePidReusedOtherGroup: the freeze and the kill read the
// process group each scouted process is in when they signal (getpgid of
// its pid). A scouted process (the writer of heartbeat reaped) is killed
// and reaped after the scout, and its pid goes to a process outside the
// tree (`sleep 60`) in a process group that another process outside the
// tree leads, one the guard never saw: getpgid of the scouted pid now
// names that group. The guard must signal neither outsider: its pidfd for
// the scouted process says it is gone. (Needs root: ns_last_pid.)
func TestReviewWidePidReusedOtherGroup(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "heartbeat")
	if err != nil {
		t.Fatal(err)
	}
	hb := startHeartbeat(t, prog, "reaped", time.Minute, 2*time.Second)
	writer := readInt(hb.out)
	reapScouted(t, hb, writer)
	leader := startOutsider(t, 0)
	member := reusePid(t, writer, leader)
	if f := statFields(writer); f == nil || f[2] != strconv.Itoa(leader) {
		t.Fatalf("the outsider %d is not in group %d: stat %v", member.Process.Pid, leader, f)
	}
	t.Logf("the scouted writer's pid %d went to an outsider in group %d, which the outsider %d leads", writer, leader, leader)
	r, ok := hb.g.report(reportWithin)
	if !ok {
		t.Fatalf("no report within %s of the deadline; alive: %s", reportWithin, describe(hb.held.alive()))
	}
	if !r.Killed || !r.Expired {
		t.Errorf("report %+v; want killed, expired", r)
	}
	time.Sleep(100 * time.Millisecond)
	for _, pid := range []int{writer, leader} {
		if f := statFields(pid); f == nil || f[0] == "T" || f[0] == "Z" || f[0] == "t" {
			t.Errorf("the outsider %d (outside the tree, in group %d, which getpgid of a scouted pid reused since names) was signalled by the guard: stat %v", pid, leader, f)
		}
	}
}
