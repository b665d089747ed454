// Package partitiontest is the conformance suite every
// partition.Coordinator passes: the contract of its methods, and a
// partition.Group's balance, planned hand-over and takeover after a
// member's lease expires, on the real backend.
package partitiontest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// Factory returns a new coordinator on the backend under test, as a new
// process would have (its own client or pool). The suite closes it.
// Callers of Run (each backend's conformance test) write one.
type Factory func(t *testing.T) partition.Coordinator

// Option configures the suite. Callers of Run (each backend's conformance
// test) pass the ones their backend needs.
type Option func(*options)

type options struct {
	ttl   time.Duration
	slack time.Duration
	free  func(t *testing.T, group, name string)
	move  func(t *testing.T, m partition.Member, to string)
	kept  bool
	own   func(t *testing.T, group, name string, owner partition.Member)

	ignored func(t *testing.T, m partition.Member, owned tenure.Grant)
	without map[string]string // WithoutByHand: check → why
}

// WithTTL sets the membership TTL of the expiry checks. Default 2s.
func WithTTL(ttl time.Duration) Option { return func(o *options) { o.ttl = ttl } }

// WithFreeByHand gives the way an operator frees a partition by hand on the
// backend, whoever owns it (etcd: `tenure release --force` of its key,
// etcdctl del; PostgreSQL: an UPDATE of the partition table), and runs the
// FreedByHand check: its owner must stop running it within a renewal
// interval, while another member may claim it.
func WithFreeByHand(free func(t *testing.T, group, name string)) Option {
	return func(o *options) { o.free = free }
}

// Run runs every check, each in its own subtest with fresh coordinators;
// WatchMembers only for a coordinator that is a partition.MembersWatcher,
// FreedByHand only WithFreeByHand, MovedMembership only
// WithMovedMembership, OtherGroupsOwner only WithOwnerByHand, and
// IgnoredEdit only WithIgnoredEdit. Each of those four needs its option
// or WithoutByHand: Run fails at once with neither.
func Run(t *testing.T, newCoordinator Factory, opts ...Option) {
	o := options{ttl: 2 * time.Second, slack: 5 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	s := suite{newCoordinator: newCoordinator, o: o}
	t.Run("Contract", s.contract)
	t.Run("Expiry", s.expiry)
	t.Run("Balance", s.balance)
	t.Run("PlannedLeave", s.plannedLeave)
	t.Run("Crash", s.crash)
	t.Run("Announce", s.announce)
	t.Run("Rejoin", s.rejoin)
	t.Run("Check", s.check)
	t.Run("Names", s.names)
	t.Run("NestedGroups", s.nestedGroups)
	t.Run("Twins", s.twins)
	t.Run("TwinLeaves", s.twinLeaves)
	t.Run("TwinGroups", s.twinGroups)
	t.Run("LookalikeIDs", s.lookalikes)
	t.Run("LongNames", s.longNames)
	t.Run("LiveNotForeign", s.liveNotForeign)
	t.Run("RemoveForeignSparesLive", s.removeForeignSparesLive)
	t.Run("ElectorAndGroupOfOneProcess", s.electorAndGroupOfOneProcess)
	t.Run("ClaimOverOwnSingleGrant", s.claimOverOwnSingleGrant)
	t.Run("ElectorThenGroupOfOneProcess", s.electorThenGroupOfOneProcess)
	if o.free != nil {
		t.Run("FreedByHand", s.freedByHand)
	}
	if o.move != nil {
		t.Run("MovedMembership", s.movedMembership)
	}
	if o.own != nil {
		t.Run("OtherGroupsOwner", s.otherGroupsOwner)
	}
	if o.ignored != nil {
		t.Run("IgnoredEdit", s.ignoredEdit)
	}
	probe := newCoordinator(t)
	_, watches := probe.(partition.MembersWatcher)
	_ = probe.Close()
	if watches {
		t.Run("WatchMembers", s.watchMembers)
	}
}

type suite struct {
	newCoordinator Factory
	o              options
}

// group returns a coordinator from the factory, closed when the test ends.
func (s suite) group(t *testing.T) partition.Coordinator {
	c := s.newCoordinator(t)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func groupName(t *testing.T) string {
	return fmt.Sprintf("ptest/%d", time.Now().UnixNano())
}

func (s suite) join(t *testing.T, c partition.Coordinator, group, id string) partition.Member {
	return s.joinWith(t, c, group, id, 0)
}

// joinWith joins announcing p partitions.
func (s suite) joinWith(t *testing.T, c partition.Coordinator, group, id string, p int) partition.Member {
	return joinFor(t, c, group, id, p, s.o.ttl)
}

// joinFor joins announcing p partitions, with a lease of ttl.
func joinFor(t *testing.T, c partition.Coordinator, group, id string, p int, ttl time.Duration) partition.Member {
	t.Helper()
	m, err := c.JoinGroup(ctx(t), group, id, ttl, p)
	if err != nil {
		t.Fatalf("JoinGroup(%q, %q, %d partitions) error = %v", group, id, p, err)
	}
	if m.Epoch == 0 || m.TTL < ttl || m.ID != id || m.Group != group || m.Partitions != p {
		t.Fatalf("JoinGroup(%q, %q, %d partitions) = %+v; want that group, id and count, an epoch and TTL ≥ %s", group, id, p, m, ttl)
	}
	return m
}

// renew renews m, so that a check that takes a while under load (200
// claims on Kubernetes) does not outlive a membership that nothing else
// renews.
func renew(t *testing.T, c partition.Coordinator, m partition.Member) partition.Member {
	t.Helper()
	r, err := c.RenewMember(ctx(t), m)
	if err != nil {
		t.Fatalf("RenewMember(%s) error = %v", m, err)
	}
	return r
}

func claim(t *testing.T, c partition.Coordinator, m partition.Member, names ...string) []partition.ClaimResult {
	res, err := c.ClaimPartitions(ctx(t), m, names)
	if err != nil {
		t.Fatalf("ClaimPartitions(%s, %v) error = %v", m, names, err)
	}
	if len(res) != len(names) {
		t.Fatalf("ClaimPartitions(%s, %d names) returned %d results", m, len(names), len(res))
	}
	return res
}

// contract checks claims, idempotence, refusal, release, membership and
// leave on one coordinator per member.
func (s suite) contract(t *testing.T) {
	a, b := s.group(t), s.group(t)
	g := groupName(t)
	// Nothing here waits for an expiry, and 200 claims and their checks
	// outlive the expiry checks' 2 s membership on a loaded machine.
	ma, mb := joinFor(t, a, g, "a#1", 0, time.Minute), joinFor(t, b, g, "b#1", 0, time.Minute)
	names := make([]string, 200) // more than one etcd transaction's worth
	for i := range names {
		names[i] = fmt.Sprint(i)
	}
	first := claim(t, a, ma, names...)
	for i, r := range first {
		if r.Err != nil || r.Grant.Token == 0 || r.Grant.Holder != "a#1" || r.Grant.Key != partition.Key(g, names[i]) {
			t.Fatalf("claim of free partition %s = %+v, %v; want a grant to a#1", names[i], r.Grant, r.Err)
		}
	}
	s.claimAgain(t, a, b, ma, mb, first[0].Grant, first[199].Grant)
	var held *tenure.HeldError
	if r := claim(t, b, mb, "7")[0]; !errors.As(r.Err, &held) || held.Holder != "a#1" || held.Token != first[7].Grant.Token {
		t.Errorf("b's claim of a's partition = %+v, %v; want a *HeldError naming a#1 and token %d", r.Grant, r.Err, first[7].Grant.Token)
	}
	if err := a.ReleasePartitions(ctx(t), ma, []tenure.Grant{first[7].Grant, first[8].Grant}); err != nil {
		t.Fatalf("ReleasePartitions() error = %v", err)
	}
	if err := a.ReleasePartitions(ctx(t), ma, []tenure.Grant{first[7].Grant}); err != nil {
		t.Errorf("releasing a released partition: error = %v; want nil", err)
	}
	if r := claim(t, b, mb, "7")[0]; r.Err != nil || r.Grant.Token <= first[7].Grant.Token {
		t.Errorf("b's claim of a released partition = %+v, %v; want a grant with token > %d", r.Grant, r.Err, first[7].Grant.Token)
	}
	s.checkMembers(t, a, g, "a#1", "b#1")
	parts, err := a.GroupPartitions(ctx(t), g)
	if err != nil || len(parts) != 199 {
		t.Errorf("GroupPartitions() = %d grants, %v; want 199 (198 of a, 1 of b)", len(parts), err)
	}
	if err := a.LeaveGroup(ctx(t), ma); err != nil {
		t.Fatalf("LeaveGroup() error = %v", err)
	}
	if r := claim(t, b, mb, "1")[0]; r.Err != nil || r.Grant.Token <= first[1].Grant.Token {
		t.Errorf("claim after the owner left = %+v, %v; want a grant with token > %d", r.Grant, r.Err, first[1].Grant.Token)
	}
	if _, err := a.RenewMember(ctx(t), ma); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("RenewMember() after LeaveGroup error = %v; want ErrLost", err)
	}
	if _, err := a.ClaimPartitions(ctx(t), ma, []string{"2"}); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("ClaimPartitions() after LeaveGroup error = %v; want ErrLost", err)
	}
	s.checkMembers(t, b, g, "b#1")
}

// announce checks that the partition count a member announces as it joins
// is recorded with its membership and reported by GroupMembers, through
// renewals and claims, with the TTL its lease was granted (not the time
// left), that a negative count is refused, and that a membership that is
// gone is no longer reported.
func (s suite) announce(t *testing.T) {
	a, b := s.group(t), s.group(t)
	g := groupName(t)
	// Memberships that live a minute: nothing here waits for an expiry,
	// and on a loaded machine its steps outlive a short TTL.
	joinFor(t, b, g, "c#1", 0, time.Minute)
	s.checkCounts(t, a, g, "c#1=0")
	ma, _ := joinFor(t, a, g, "a#1", 8, time.Minute), joinFor(t, b, g, "b#1", 4, time.Minute)
	s.checkCounts(t, b, g, "a#1=8 b#1=4 c#1=0")
	s.checkTTL(t, b, ma)
	r, err := a.RenewMember(ctx(t), ma)
	if err != nil || r.Partitions != 8 {
		t.Errorf("RenewMember() = %+v, %v; want the member with Partitions 8", r, err)
	}
	claim(t, a, r, "0")
	s.checkCounts(t, b, g, "a#1=8 b#1=4 c#1=0")
	if m, err := a.JoinGroup(ctx(t), g, "d#1", s.o.ttl, -1); !errors.Is(err, tenure.ErrInvalidConfig) {
		t.Errorf("JoinGroup() announcing -1 partitions = %+v, %v; want ErrInvalidConfig", m, err)
	}
	s.checkCounts(t, b, g, "a#1=8 b#1=4 c#1=0")
	if err := a.LeaveGroup(ctx(t), r); err != nil {
		t.Fatalf("LeaveGroup() error = %v", err)
	}
	s.checkCounts(t, b, g, "b#1=4 c#1=0")
}

// checkCounts checks the members of group and the partition counts they
// announced, as "id=P" in GroupMembers' order.
func (s suite) checkCounts(t *testing.T, c partition.Coordinator, group, want string) {
	t.Helper()
	ms, err := c.GroupMembers(ctx(t), group)
	if err != nil {
		t.Fatalf("GroupMembers() error = %v", err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, fmt.Sprintf("%s=%d", m.ID, m.Partitions))
	}
	if strings.Join(got, " ") != want {
		t.Errorf("GroupMembers() = %s; want %s (member=partitions announced)", strings.Join(got, " "), want)
	}
}

// checkTTL checks that GroupMembers reports m with the TTL JoinGroup or
// RenewMember granted it.
func (s suite) checkTTL(t *testing.T, c partition.Coordinator, m partition.Member) {
	t.Helper()
	ms, err := c.GroupMembers(ctx(t), m.Group)
	if err != nil {
		t.Fatalf("GroupMembers() error = %v", err)
	}
	for _, got := range ms {
		if got.ID == m.ID && got.Epoch == m.Epoch && got.TTL != m.TTL {
			t.Errorf("GroupMembers() reports %s with TTL %s; want %s, the TTL granted", m.ID, got.TTL, m.TTL)
		}
	}
}

func (s suite) checkMembers(t *testing.T, c partition.Coordinator, group string, want ...string) {
	t.Helper()
	ms, err := c.GroupMembers(ctx(t), group)
	if err != nil {
		t.Fatalf("GroupMembers() error = %v", err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.ID)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("GroupMembers() = %v; want %v", got, want)
	}
}

// expiry checks that a member that stops renewing loses every partition at
// its lease's expiry, not before, and that renewing keeps them. Only a's
// lease is timed: b, which claims a's partitions, has a lease of the TTL
// and the slack, as b is renewed only between claims, and a loaded machine
// (load 20 on 2 cores, PostgreSQL) has taken over 0.8 s for one claim, which
// outlived a lease of the TTL renewed at TTL/2 before a sleep of 0.6 TTL
// and a claim. Each bound on a's lease is judged from the test's clock: a's
// first lease is over once the TTL has passed since its join answered, and
// a's renewed lease lasts at least the TTL from when its renewal was sent.
func (s suite) expiry(t *testing.T) {
	a, b := s.group(t), s.group(t)
	g := groupName(t)
	joining := time.Now()
	ma := s.join(t, a, g, "a#1")
	joined := time.Now()
	mb := joinFor(t, b, g, "b#1", 0, s.o.ttl+s.o.slack)
	owned := claim(t, a, ma, "0", "1", "2")
	time.Sleep(time.Until(joining.Add(s.o.ttl / 2)))
	renewed := time.Now()
	if _, err := a.RenewMember(ctx(t), ma); err != nil {
		t.Fatalf("RenewMember() %s after its join was sent error = %v", time.Since(joining), err)
	}
	// a's first lease is over, the renewed one is not: still held.
	time.Sleep(time.Until(joined.Add(s.o.ttl + s.o.ttl/10)))
	r := claim(t, b, mb, "1")[0]
	switch answered := time.Since(renewed); {
	case errors.Is(r.Err, tenure.ErrHeld):
	case answered < s.o.ttl:
		t.Errorf("claim of a renewed member's partition, answered %s after its renewal was sent = %+v, %v; want ErrHeld until the TTL %s", answered, r.Grant, r.Err, s.o.ttl)
	default:
		t.Logf("claim of a renewed member's partition answered %s after its renewal was sent, past the TTL %s (a slow machine): not judged", answered, s.o.ttl)
	}
	renewBy := time.Now().Add(s.o.ttl + s.o.slack)
	for {
		if _, err := b.RenewMember(ctx(t), mb); err != nil {
			t.Fatalf("RenewMember(b) error = %v", err)
		}
		r := claim(t, b, mb, "0", "1", "2")
		answered := time.Since(renewed)
		if r[0].Err == nil && r[1].Err == nil && r[2].Err == nil {
			if answered < s.o.ttl {
				t.Errorf("a's partitions claimed by b, answered %s after a's renewal was sent; want not before the TTL %s", answered, s.o.ttl)
			}
			for i := range r {
				if r[i].Grant.Token <= owned[i].Grant.Token {
					t.Errorf("partition %d taken over with token %d; want > %d", i, r[i].Grant.Token, owned[i].Grant.Token)
				}
			}
			break
		}
		if time.Now().After(renewBy) {
			t.Fatalf("a's partitions still held %s after its last renewal was sent; want free after TTL %s", answered, s.o.ttl)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := a.RenewMember(ctx(t), ma); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("RenewMember() after expiry error = %v; want ErrLost (never revived)", err)
	}
}

// claimAgain checks that a claim of partitions m already owns supersedes
// its grants (old) with new ones and new tokens, as Acquire supersedes a
// holder's own grant: a release of an old grant
// that arrives late (sent before the claim, abandoned, applied after it)
// frees nothing, so another member's claim is still refused.
func (s suite) claimAgain(t *testing.T, a, b partition.Coordinator, ma, mb partition.Member, old ...tenure.Grant) {
	t.Helper()
	names := make([]string, len(old))
	for i, g := range old {
		names[i] = strings.TrimPrefix(g.Key, ma.Group+"/")
	}
	again := claim(t, a, ma, names...)
	var grants []tenure.Grant
	for i, r := range again {
		if r.Err != nil || r.Grant.Token <= old[i].Token || r.Grant.Holder != ma.ID {
			t.Fatalf("claiming owned partition %s again = %+v, %v; want a new grant to %s with a token > %d", names[i], r.Grant, r.Err, ma.ID, old[i].Token)
		}
		grants = append(grants, r.Grant)
	}
	if err := a.ReleasePartitions(ctx(t), ma, old); err != nil {
		t.Errorf("ReleasePartitions(superseded grants) error = %v; want nil", err)
	}
	if lost, err := a.CheckPartitions(ctx(t), ma, grants); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions(new grants) after a release of the superseded ones = %v, %v; want none lost", lost, err)
	}
	var held *tenure.HeldError
	if r := claim(t, b, mb, names[0])[0]; !errors.As(r.Err, &held) || held.Holder != ma.ID || held.Token != grants[0].Token {
		t.Errorf("%s's claim of %s after a late release of its superseded grant = %+v, %v; want a *HeldError naming %s and token %d",
			mb.ID, names[0], r.Grant, r.Err, ma.ID, grants[0].Token)
	}
}
