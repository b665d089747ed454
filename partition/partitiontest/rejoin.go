package partitiontest

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// rejoin checks that joining again with an id that already has a live
// membership makes a second membership and leaves the first alone (see
// partition.Coordinator.JoinGroup): the first still renews and still owns
// its partitions, which the second is refused, until it leaves.
func (s suite) rejoin(t *testing.T) {
	a, b := s.group(t), s.group(t)
	g := groupName(t)
	// Memberships that live a minute: nothing here waits for an expiry,
	// and on a loaded machine its steps outlive a short TTL.
	first := joinFor(t, a, g, "r#1", 0, time.Minute)
	owned := claim(t, a, first, "0")[0]
	if owned.Err != nil {
		t.Fatalf("claim of a free partition = %v; want a grant", owned.Err)
	}
	second := joinFor(t, b, g, "r#1", 0, time.Minute)
	if second.Epoch == first.Epoch {
		t.Fatalf("JoinGroup() again = epoch %d; want a new epoch", second.Epoch)
	}
	if _, err := a.RenewMember(ctx(t), first); err != nil {
		t.Errorf("RenewMember(first membership) after the same id joined again = %v; want it renewed", err)
	}
	if lost, err := a.CheckPartitions(ctx(t), first, []tenure.Grant{owned.Grant}); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions(first membership) after the same id joined again = %v, %v; want its partition still owned", lost, err)
	}
	var held *tenure.HeldError
	second = renew(t, b, second)
	if r := claim(t, b, second, "0")[0]; !errors.As(r.Err, &held) || held.Token != owned.Grant.Token {
		t.Errorf("second membership's claim of the first's partition = %+v, %v; want a *HeldError with token %d", r.Grant, r.Err, owned.Grant.Token)
	}
	// The second membership releases the first's grant as the table lists
	// it (a member's release of the partitions the table lists under its
	// ID that it does not run): it names the same ID and token, but not
	// the membership, so it frees nothing.
	listed, err := b.GroupPartitions(ctx(t), g)
	if err != nil || len(listed) != 1 || listed[0].Holder != "r#1" || listed[0].Token != owned.Grant.Token {
		t.Fatalf("GroupPartitions() = %+v, %v; want the first membership's grant, token %d", listed, err, owned.Grant.Token)
	}
	second = renew(t, b, second)
	if err := b.ReleasePartitions(ctx(t), second, listed); err != nil {
		t.Errorf("ReleasePartitions(second membership, the first's grant) = %v; want nil (nothing freed)", err)
	}
	first = renew(t, a, first)
	if lost, err := a.CheckPartitions(ctx(t), first, []tenure.Grant{owned.Grant}); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions(first membership) after the second released its grant = %v, %v; want its partition still owned", lost, err)
	}
	if r := claim(t, b, second, "0")[0]; !errors.As(r.Err, &held) || held.Token != owned.Grant.Token {
		t.Errorf("second membership's claim after releasing the first's grant = %+v, %v; want a *HeldError with token %d", r.Grant, r.Err, owned.Grant.Token)
	}
	second = renew(t, b, second)
	if err := a.LeaveGroup(ctx(t), first); err != nil {
		t.Fatalf("LeaveGroup(first membership) error = %v", err)
	}
	if r := claim(t, b, second, "0")[0]; r.Err != nil || r.Grant.Token <= owned.Grant.Token {
		t.Errorf("second membership's claim after the first left = %+v, %v; want a grant with token > %d", r.Grant, r.Err, owned.Grant.Token)
	}
	if _, err := b.RenewMember(ctx(t), second); err != nil {
		t.Errorf("RenewMember(second membership) after the first left = %v; want it renewed", err)
	}
}
