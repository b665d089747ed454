package etcd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestAcquireByOwnersIDTakesPartition tries a single-key Acquire
// of a live partition's key by a holder named as the member that owns the
// partition (one process running an Elector and a partition Group under
// one identity, or two processes configured alike). Acquire supersedes a
// holder's own grant; it must not take that for the partition's grant: the
// partition belongs to the member's lease, and the member still runs it
// (CheckPartitions says so until the key is gone). Every other backend
// refuses such an Acquire while the member lives.
func TestAcquireByOwnersIDTakesPartition(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, newClient(t, startEtcd(t)))
	m, err := c.JoinGroup(ctx(t), "team/jobs", "worker-1", time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx(t), m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	part := res[0].Grant
	g, err := c.Acquire(ctx(t), "team/jobs/0", "worker-1", time.Minute)
	lost, cerr := c.CheckPartitions(ctx(t), m, []tenure.Grant{part})
	t.Logf("partition grant %+v; Acquire by the same identity = %+v, %v; member's CheckPartitions after: lost %v, %v", part, g, err, lost, cerr)
	var held *tenure.HeldError
	if !errors.As(err, &held) {
		t.Errorf("Acquire(team/jobs/0, worker-1) while member worker-1 (epoch %x) owns partition 0 with token %d = %+v, %v; want a *tenure.HeldError: the single-key holder and the member both hold the partition until the member's next check", m.Epoch, part.Token, g, err)
	}
}
