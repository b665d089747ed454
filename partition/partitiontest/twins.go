package partitiontest

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// twins checks that two memberships of one member ID in one group, each
// from its own coordinator (a restarted process whose old membership
// lives, a twin), are two memberships (see partition.Coordinator.JoinGroup):
// GroupMembers lists both; a single-key Acquire of the first's partition by
// that ID, from either process or a third, is refused and leaves the
// partition the first's; when the second expires, or another leaves, the
// first, renewing, is still listed and still owns its partition, which
// another member is refused; when the first leaves, its partition is free
// at once.
func (s suite) twins(t *testing.T) {
	a, b, c := s.group(t), s.group(t), s.group(t)
	g := groupName(t)
	first := s.joinWith(t, a, g, "r#1", 2)
	owned := claimAll(t, a, first, "0")[0]
	second := s.joinWith(t, b, g, "r#1", 2)
	if second.Epoch == first.Epoch {
		t.Fatalf("JoinGroup() again = epoch %d; want a new epoch", second.Epoch)
	}
	view := groupView{members: []partition.Member{first, second}, parts: []tenure.Grant{owned}}
	view.check(t, c, g)
	// Each step is a few statements: under load they outlive a 2 s
	// membership. Both are renewed before the Acquires (the second is
	// left to expire after them, in outliveTwin).
	first, second = renew(t, a, first), renew(t, b, second)
	view.members = []partition.Member{first, second}
	for name, x := range map[string]partition.Coordinator{"the first's": a, "the second's": b, "a third": c} {
		if gr, err := x.Acquire(ctx(t), owned.Key, "r#1", time.Minute); err == nil {
			t.Errorf("Acquire(%q, %q) from %s coordinator = %s, over the live partition grant with token %d; want it refused", owned.Key, "r#1", name, gr, owned.Token)
		}
	}
	view.check(t, c, g)
	first = s.outliveTwin(t, a, c, first, second, owned)
	third := s.joinWith(t, b, g, "r#1", 2)
	if err := b.LeaveGroup(ctx(t), third); err != nil {
		t.Fatalf("LeaveGroup(a third membership of the same ID) error = %v", err)
	}
	first = renew(t, a, first)
	view = groupView{members: []partition.Member{first}, parts: []tenure.Grant{owned}}
	view.check(t, c, g)
	if lost, err := a.CheckPartitions(ctx(t), first, []tenure.Grant{owned}); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions(first membership) after a twin left = %v, %v; want its partition still owned", lost, err)
	}
	other := joinFor(t, c, g, "o#1", 0, time.Minute)
	var held *tenure.HeldError
	if r := claim(t, c, other, "0")[0]; !errors.As(r.Err, &held) || held.Holder != "r#1" || held.Token != owned.Token {
		t.Errorf("another member's claim of the first's partition after its twins left = %+v, %v; want a *HeldError naming r#1, token %d", r.Grant, r.Err, owned.Token)
	}
	if err := a.LeaveGroup(ctx(t), first); err != nil {
		t.Fatalf("LeaveGroup(first membership) error = %v", err)
	}
	if r := claim(t, c, other, "0")[0]; r.Err != nil || r.Grant.Token <= owned.Token {
		t.Errorf("claim after the first membership left = %+v, %v; want a grant with token > %d", r.Grant, r.Err, owned.Token)
	}
	if ms, err := c.GroupMembers(ctx(t), g); err != nil || memberList(ms) != memberList([]partition.Member{other}) {
		t.Errorf("GroupMembers() after the first membership left = %s, %v; want %s", memberList(ms), err, memberList([]partition.Member{other}))
	}
}

// outliveTwin renews first, and only first, until second, its twin that
// nothing renews, has expired (GroupMembers no longer lists it: within its
// TTL and the slack), checking all along that first stays listed and owns
// owned; it returns first as last renewed.
func (s suite) outliveTwin(t *testing.T, a, c partition.Coordinator, first, second partition.Member, owned tenure.Grant) partition.Member {
	t.Helper()
	start := time.Now()
	for {
		first = renew(t, a, first)
		if lost, err := a.CheckPartitions(ctx(t), first, []tenure.Grant{owned}); err != nil || len(lost) != 0 {
			t.Fatalf("CheckPartitions(first membership) %s after its twin joined = %v, %v; want its partition still owned", time.Since(start), lost, err)
		}
		ms, err := c.GroupMembers(ctx(t), first.Group)
		if err != nil {
			t.Fatalf("GroupMembers() error = %v", err)
		}
		got := memberList(ms)
		switch got {
		case memberList([]partition.Member{first}):
			t.Logf("the twin's membership expired %s after the first was joined again", time.Since(start))
			return first
		case memberList([]partition.Member{first, second}):
		default:
			t.Fatalf("GroupMembers() %s after the twin joined = %s; want the first membership listed, and the twin's until it expires", time.Since(start), got)
		}
		if time.Since(start) > second.TTL+s.o.slack {
			t.Fatalf("twin's membership still listed %s after it joined; want it gone after its TTL %s", time.Since(start), second.TTL)
		}
		time.Sleep(second.TTL / 10)
	}
}

// twinLeaves checks a running member through a twin's join and leave: a
// membership of its own ID joined by another process (announcing the same
// count) and left again. The member keeps running every partition all
// along, and still does a renewal interval after the twin left (the twin's
// leave took nothing of its own: its membership, its partitions).
func (s suite) twinLeaves(t *testing.T) {
	ttl := 10 * time.Second
	f := s.fleet(t, 4, ttl)
	f.start("a")
	f.await("a runs every partition", ttl+s.o.slack, f.settled)
	x := s.group(t)
	twin, err := x.JoinGroup(ctx(t), f.cfg.Key, "a#1", ttl, f.cfg.Partitions)
	if err != nil {
		t.Fatalf("JoinGroup(the member's own ID) error = %v", err)
	}
	renewEvery := timing.RenewInterval(f.cfg.TTL, f.cfg.RenewInterval)
	watch := func(what string, d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if !f.settled() {
				t.Fatalf("%s: a no longer runs every partition: owners %v", what, f.owners())
			}
		}
	}
	watch("beside its twin", renewEvery)
	if err := x.LeaveGroup(ctx(t), twin); err != nil {
		t.Fatalf("LeaveGroup(twin) error = %v", err)
	}
	watch("after its twin left", renewEvery+s.o.slack/5)
	ms, err := x.GroupMembers(ctx(t), f.cfg.Key)
	if err != nil || len(ms) != 1 || ms[0].ID != "a#1" || ms[0].Epoch == twin.Epoch {
		t.Errorf("GroupMembers() after the twin left = %s, %v; want a's own membership", memberList(ms), err)
	}
	f.stopAll()
	f.checkTokens()
}
