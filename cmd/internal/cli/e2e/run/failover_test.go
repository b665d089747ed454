package run

import (
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

// TestRunSIGKILLFailover: SIGKILL the leading tenure; its command dies with
// it, and the other contender's command starts within TTL + 1s with a
// greater token.
func TestRunSIGKILLFailover(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	e2e.SIGKILLFailover(t, s.Coord)
}

// TestRunPausedLeader: SIGSTOP the leading tenure and its command for
// 3×TTL; the other contender takes over; on SIGCONT the resumed command is
// killed at once, and the fenced resource accepts none of its writes after
// the takeover.
func TestRunPausedLeader(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	r := e2e.StartResource(t)
	leader, follower, first := e2e.LeaderOfTwo(t, s.Coord, r, "jobs")
	t.Logf("%s leads with token %d (command pid %d)", leader.Name, first.Token, first.PID)

	// The whole machine pauses: the command, tenure and the guard that
	// would otherwise kill the command at its deadline.
	guardPid := e2e.ParentOf(t, first.PID)
	syscall.Kill(first.PID, syscall.SIGSTOP)
	syscall.Kill(guardPid, syscall.SIGSTOP)
	leader.Signal(t, syscall.SIGSTOP)
	t.Cleanup(func() { // should the test stop before it resumes them
		syscall.Kill(guardPid, syscall.SIGCONT)
		syscall.Kill(first.PID, syscall.SIGCONT)
	})
	time.Sleep(3 * e2e.TTL)
	next := r.First(t, e2e.Slack, "from the follower while the leader was paused", func(w e2e.Write) bool { return w.Holder == follower.Name })
	if next.Token <= first.Token {
		t.Fatalf("follower's token = %d; want > %d", next.Token, first.Token)
	}

	// Resume the command first, so that it sends writes with its old
	// token before its tenure wakes up and kills it.
	syscall.Kill(first.PID, syscall.SIGCONT)
	deadline := time.Now().Add(2 * time.Second)
	for r.Rejections(first.Token) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if r.Rejections(first.Token) == 0 {
		t.Errorf("the resumed command's writes with token %d were not rejected", first.Token)
	}
	leader.Signal(t, syscall.SIGCONT)
	syscall.Kill(guardPid, syscall.SIGCONT)
	took := e2e.WaitDead(t, first.PID, e2e.Slack, "resumed command")
	if took > e2e.Slack {
		t.Errorf("resumed command died %s after its tenure's SIGCONT; want promptly (< %s)", took.Round(time.Millisecond), e2e.Slack)
	}
	t.Logf("resumed command died %s after its tenure's SIGCONT", took.Round(time.Millisecond))

	// Nothing the old term wrote was accepted once the new term had
	// written: the resource's own decision order says so.
	for _, w := range r.Accepted() {
		if w.Token == first.Token && w.Seq > next.Seq {
			t.Errorf("resource accepted a write with the old token %d (decision %d) after the takeover (decision %d)", w.Token, w.Seq, next.Seq)
		}
	}
	t.Logf("writes rejected with the old token: %d", r.Rejections(first.Token))

	// The old leader lives on as a follower: it must not run a command
	// again while the other leads.
	time.Sleep(e2e.TTL / 2)
	if leader.Exited() {
		t.Errorf("the resumed tenure exited (code %d); want it to campaign again", leader.Code)
	}
	for _, w := range r.Accepted() {
		if w.Holder == leader.Name && w.Seq > next.Seq {
			t.Errorf("the resumed tenure's holder wrote with token %d while %s leads", w.Token, follower.Name)
			break
		}
	}
}

// TestRunCoordinatorStopped: SIGSTOP the server; the leader's command is
// killed before a TTL has passed since the stop, and runs again with a
// greater token once the server is back.
func TestRunCoordinatorStopped(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	r := e2e.StartResource(t)
	leader := e2e.Contender(t, s.Coord, r, "jobs", "a")
	first := r.First(t, 15*time.Second, "from the leader", func(e2e.Write) bool { return true })

	s.Signal(t, syscall.SIGSTOP)
	took := e2e.WaitDead(t, first.PID, 2*e2e.TTL, "command while the coordinator is stopped")
	s.Signal(t, syscall.SIGCONT)
	if took >= e2e.TTL {
		t.Errorf("command killed %s after the coordinator stopped; want before the TTL (%s)", took.Round(time.Millisecond), e2e.TTL)
	}
	t.Logf("command killed %s after the coordinator stopped (TTL %s)", took.Round(time.Millisecond), e2e.TTL)

	again := r.First(t, 3*e2e.TTL+5*time.Second, "after the coordinator came back", func(w e2e.Write) bool { return w.Token > first.Token })
	if again.Holder != "a" {
		t.Errorf("write after the coordinator came back by %q; want a", again.Holder)
	}
	if leader.Exited() {
		t.Errorf("tenure exited (code %d) while the coordinator was stopped; want it to campaign again", leader.Code)
	}
}
