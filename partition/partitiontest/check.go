package partitiontest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// check checks CheckPartitions: nothing lost while a member owns its
// partitions, a partition it released (and another member claimed since)
// reported lost, and ErrLost once the member left.
func (s suite) check(t *testing.T) {
	a, b := s.group(t), s.group(t)
	g := groupName(t)
	// Memberships that live a minute: nothing here waits for an expiry, and
	// a's 200 claims can outlast a short TTL on a loaded machine.
	ma := joinFor(t, a, g, "a#1", 0, time.Minute)
	names := make([]string, 200) // more than one etcd transaction's worth
	for i := range names {
		names[i] = fmt.Sprint(i)
	}
	var gs []tenure.Grant
	for _, r := range claim(t, a, ma, names...) {
		gs = append(gs, r.Grant)
	}
	ma = renew(t, a, ma)
	if lost, err := a.CheckPartitions(ctx(t), ma, gs); err != nil || len(lost) != 0 {
		t.Fatalf("CheckPartitions(%d owned) = %v, %v; want none lost", len(gs), lost, err)
	}
	if err := a.ReleasePartitions(ctx(t), ma, gs[7:8]); err != nil {
		t.Fatalf("ReleasePartitions() error = %v", err)
	}
	mb := joinFor(t, b, g, "b#1", 0, time.Minute)
	if r := claim(t, b, mb, "7")[0]; r.Err != nil {
		t.Fatalf("b's claim of a released partition = %v", r.Err)
	}
	ma = renew(t, a, ma)
	lost, err := a.CheckPartitions(ctx(t), ma, gs)
	if err != nil || len(lost) != 1 || lost[0].Key != gs[7].Key || lost[0].Token != gs[7].Token {
		t.Errorf("CheckPartitions() after releasing %s = %v, %v; want it lost, alone", gs[7].Key, lost, err)
	}
	if err := a.LeaveGroup(ctx(t), ma); err != nil {
		t.Fatalf("LeaveGroup() error = %v", err)
	}
	if lost, err := a.CheckPartitions(ctx(t), ma, gs); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("CheckPartitions() after LeaveGroup = %v, %v; want ErrLost", lost, err)
	}
}

// freedByHand checks that a member stops running a partition that an
// operator freed by hand and another member claimed, within one renewal
// interval (plus a round trip), and well before a safe lease: the member
// checks the partitions it runs at every renewal. The other member
// announces another partition count, so the group's member leaves it out of
// its assignment and hands it nothing.
func (s suite) freedByHand(t *testing.T) {
	ttl := 20 * time.Second // a safe lease (15.8s) well beyond a renewal interval and the slack
	f := s.fleet(t, 4, ttl)
	f.start("a")
	f.await("a owns every partition", ttl+s.o.slack, f.settled)
	x := s.group(t)
	mx, err := x.JoinGroup(ctx(t), f.cfg.Key, "x#1", time.Minute, 5)
	if err != nil {
		t.Fatalf("JoinGroup(x) error = %v", err)
	}
	key := partition.Key(f.cfg.Key, "1")
	s.o.free(t, f.cfg.Key, "1")
	freed := time.Now()
	r := claim(t, x, mx, "1")[0]
	if r.Err != nil {
		t.Fatalf("x's claim of partition 1, freed by hand = %v; want a grant", r.Err)
	}
	renew := min(timing.RenewInterval(f.cfg.TTL, f.cfg.RenewInterval), timing.SafeLease(ttl, f.cfg.MaxDrift, f.cfg.Margin)/3)
	took := f.await("a stops running partition 1", timing.SafeLease(ttl, f.cfg.MaxDrift, f.cfg.Margin)+s.o.slack, func() bool {
		_, runs := f.owners()[key]
		return !runs
	})
	t.Logf("a ran partition 1 for %s after it was freed by hand (renewal interval %s, safe lease %s)", took, renew, timing.SafeLease(ttl, f.cfg.MaxDrift, f.cfg.Margin))
	if took > renew+s.o.slack || took >= timing.SafeLease(ttl, f.cfg.MaxDrift, f.cfg.Margin) {
		t.Errorf("a ran partition 1 for %s after it was freed by hand and claimed by x; want at most a renewal interval (%s) plus a round trip", took, renew)
	}
	time.Sleep(time.Since(freed) / 2) // a claims it again, in vain
	if _, runs := f.owners()[key]; runs {
		t.Errorf("a runs partition 1 again while x holds it")
	}
	if err := x.LeaveGroup(ctx(t), mx); err != nil {
		t.Fatalf("LeaveGroup(x) error = %v", err)
	}
	f.await("a runs partition 1 again once x left", ttl+s.o.slack, f.settled)
	f.stopAll()
	f.checkTokens()
}
