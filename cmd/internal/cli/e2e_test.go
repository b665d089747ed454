package cli

import (
	"syscall"
	"testing"
	"time"
)

// leaderOfTwo starts two contenders for key and returns the one whose
// command writes first, the other, and that first write.
func leaderOfTwo(t *testing.T, coord []string, r *resource, key string) (leader, follower *proc, w write) {
	t.Helper()
	a := contender(t, coord, r, key, "a")
	b := contender(t, coord, r, key, "b")
	w = r.first(t, 15*time.Second, "from either contender", func(write) bool { return true })
	if w.holder == "a" {
		return a, b, w
	}
	return b, a, w
}

// TestRunSIGKILLFailover: SIGKILL the leading tenure; its command dies with
// it, and the other contender's command starts within TTL + 1s with a
// greater token.
func TestRunSIGKILLFailover(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir())
	testSIGKILLFailover(t, s.coord)
}

func testSIGKILLFailover(t *testing.T, coord []string) {
	r := startResource(t)
	leader, follower, first := leaderOfTwo(t, coord, r, "jobs")
	t.Logf("%s leads with token %d (command pid %d)", leader.name, first.token, first.pid)

	killed := time.Now()
	leader.signal(t, syscall.SIGKILL)
	took := waitDead(t, first.pid, e2eTTL+slack, "command of the SIGKILLed tenure")
	t.Logf("command died %s after its tenure was SIGKILLed", took.Round(time.Millisecond))

	next := r.first(t, e2eTTL+2*slack, "from the follower", func(w write) bool { return w.holder == follower.name })
	if gap := next.at.Sub(killed); gap > e2eTTL+slack {
		t.Errorf("follower's command first wrote %s after the SIGKILL; want within TTL + slack (%s)", gap.Round(time.Millisecond), e2eTTL+slack)
	} else {
		t.Logf("follower's command first wrote %s after the SIGKILL", gap.Round(time.Millisecond))
	}
	if next.token <= first.token {
		t.Errorf("follower's token = %d; want > %d", next.token, first.token)
	}
	if alive(first.pid) {
		t.Errorf("the old command (pid %d) is alive again", first.pid)
	}
}

// TestRunPausedLeader: SIGSTOP the leading tenure and its command for
// 3×TTL; the other contender takes over; on SIGCONT the resumed command is
// killed at once, and the fenced resource accepts none of its writes after
// the takeover.
func TestRunPausedLeader(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir())
	r := startResource(t)
	leader, follower, first := leaderOfTwo(t, s.coord, r, "jobs")
	t.Logf("%s leads with token %d (command pid %d)", leader.name, first.token, first.pid)

	// The whole machine pauses: the command, tenure and the guard that
	// would otherwise kill the command at its deadline.
	guardPid := parentOf(t, first.pid)
	syscall.Kill(first.pid, syscall.SIGSTOP)
	syscall.Kill(guardPid, syscall.SIGSTOP)
	leader.signal(t, syscall.SIGSTOP)
	t.Cleanup(func() { // should the test stop before it resumes them
		syscall.Kill(guardPid, syscall.SIGCONT)
		syscall.Kill(first.pid, syscall.SIGCONT)
	})
	time.Sleep(3 * e2eTTL)
	next := r.first(t, slack, "from the follower while the leader was paused", func(w write) bool { return w.holder == follower.name })
	if next.token <= first.token {
		t.Fatalf("follower's token = %d; want > %d", next.token, first.token)
	}

	// Resume the command first, so that it sends writes with its old
	// token before its tenure wakes up and kills it.
	syscall.Kill(first.pid, syscall.SIGCONT)
	deadline := time.Now().Add(2 * time.Second)
	for r.rejections(first.token) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if r.rejections(first.token) == 0 {
		t.Errorf("the resumed command's writes with token %d were not rejected", first.token)
	}
	leader.signal(t, syscall.SIGCONT)
	syscall.Kill(guardPid, syscall.SIGCONT)
	took := waitDead(t, first.pid, slack, "resumed command")
	if took > slack {
		t.Errorf("resumed command died %s after its tenure's SIGCONT; want promptly (< %s)", took.Round(time.Millisecond), slack)
	}
	t.Logf("resumed command died %s after its tenure's SIGCONT", took.Round(time.Millisecond))

	// Nothing the old term wrote was accepted once the new term had
	// written: the resource's own decision order says so.
	for _, w := range r.accepted() {
		if w.token == first.token && w.seq > next.seq {
			t.Errorf("resource accepted a write with the old token %d (decision %d) after the takeover (decision %d)", w.token, w.seq, next.seq)
		}
	}
	t.Logf("writes rejected with the old token: %d", r.rejections(first.token))

	// The old leader lives on as a follower: it must not run a command
	// again while the other leads.
	time.Sleep(e2eTTL / 2)
	if leader.exited() {
		t.Errorf("the resumed tenure exited (code %d); want it to campaign again", leader.code)
	}
	for _, w := range r.accepted() {
		if w.holder == leader.name && w.seq > next.seq {
			t.Errorf("the resumed tenure's holder wrote with token %d while %s leads", w.token, follower.name)
			break
		}
	}
}

// TestRunCoordinatorStopped: SIGSTOP the server; the leader's command is
// killed before a TTL has passed since the stop, and runs again with a
// greater token once the server is back.
func TestRunCoordinatorStopped(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir())
	r := startResource(t)
	leader := contender(t, s.coord, r, "jobs", "a")
	first := r.first(t, 15*time.Second, "from the leader", func(write) bool { return true })

	s.signal(t, syscall.SIGSTOP)
	took := waitDead(t, first.pid, 2*e2eTTL, "command while the coordinator is stopped")
	s.signal(t, syscall.SIGCONT)
	if took >= e2eTTL {
		t.Errorf("command killed %s after the coordinator stopped; want before the TTL (%s)", took.Round(time.Millisecond), e2eTTL)
	}
	t.Logf("command killed %s after the coordinator stopped (TTL %s)", took.Round(time.Millisecond), e2eTTL)

	again := r.first(t, 3*e2eTTL+5*time.Second, "after the coordinator came back", func(w write) bool { return w.token > first.token })
	if again.holder != "a" {
		t.Errorf("write after the coordinator came back by %q; want a", again.holder)
	}
	if leader.exited() {
		t.Errorf("tenure exited (code %d) while the coordinator was stopped; want it to campaign again", leader.code)
	}
}
