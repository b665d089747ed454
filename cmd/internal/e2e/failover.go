package e2e

import (
	"syscall"
	"testing"
	"time"
)

// LeaderOfTwo starts two contenders for key and returns the one whose
// command writes first, the other, and that first write.
func LeaderOfTwo(t *testing.T, coord []string, r *Resource, key string) (leader, follower *Proc, w Write) {
	t.Helper()
	a := Contender(t, coord, r, key, "a")
	b := Contender(t, coord, r, key, "b")
	w = r.First(t, 15*time.Second, "from either contender", func(Write) bool { return true })
	if w.Holder == "a" {
		return a, b, w
	}
	return b, a, w
}

// SIGKILLFailover checks, on the coordinator coord names, that when the
// leading tenure of two is SIGKILLed its command dies with it, and the
// other contender's command starts within TTL + slack with a greater
// token.
func SIGKILLFailover(t *testing.T, coord []string) {
	r := StartResource(t)
	leader, follower, first := LeaderOfTwo(t, coord, r, "jobs")
	t.Logf("%s leads with token %d (command pid %d)", leader.Name, first.Token, first.PID)

	killed := time.Now()
	leader.Signal(t, syscall.SIGKILL)
	took := WaitDead(t, first.PID, TTL+Slack, "command of the SIGKILLed tenure")
	t.Logf("command died %s after its tenure was SIGKILLed", took.Round(time.Millisecond))

	next := r.First(t, TTL+2*Slack, "from the follower", func(w Write) bool { return w.Holder == follower.Name })
	if gap := next.At.Sub(killed); gap > TTL+Slack {
		t.Errorf("follower's command first wrote %s after the SIGKILL; want within TTL + slack (%s)", gap.Round(time.Millisecond), TTL+Slack)
	} else {
		t.Logf("follower's command first wrote %s after the SIGKILL", gap.Round(time.Millisecond))
	}
	if next.Token <= first.Token {
		t.Errorf("follower's token = %d; want > %d", next.Token, first.Token)
	}
	if Alive(first.PID) {
		t.Errorf("the old command (pid %d) is alive again", first.PID)
	}
}
