package partition_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/lease"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
)

// noSentLink is a coordinator with a bug: it reports memberships without
// Member.Sent, at the join (join set) or at renewals.
type noSentLink struct {
	*memory.Coordinator
	join bool
	ran  atomic.Bool // a partition function ran
}

func (l *noSentLink) JoinGroup(ctx context.Context, group, id string, ttl time.Duration, p int) (tenure.Member, error) {
	m, err := l.Coordinator.JoinGroup(ctx, group, id, ttl, p)
	if l.join {
		m.Sent = tenure.Instant{}
	}
	return m, err
}

func (l *noSentLink) RenewMember(ctx context.Context, m tenure.Member) (tenure.Member, error) {
	m, err := l.Coordinator.RenewMember(ctx, m)
	m.Sent = tenure.Instant{}
	return m, err
}

// TestMembershipWithoutSentIsAnError: a membership whose lease's start is
// unknown (no Member.Sent) has no safe deadline. As for the Elector's
// grants, Run returns an error wrapping lease.ErrNoSent, at the join (having
// run nothing) or at the renewal (having ended every term), and leaves the
// group.
func TestMembershipWithoutSentIsAnError(t *testing.T) {
	for _, join := range []bool{true, false} {
		name := map[bool]string{true: "join", false: "renewal"}[join]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				coord := memory.New()
				defer coord.Close()
				link := &noSentLink{Coordinator: coord, join: join}
				cfg := partition.DefaultConfig()
				cfg.Key, cfg.Partitions, cfg.Holder, cfg.Instance = "jobs", 2, "a", "1"
				cfg.TTL, cfg.Margin = 3*time.Second, 300*time.Millisecond
				g, err := partition.New(link, cfg)
				if err != nil {
					t.Fatal(err)
				}
				err = g.Run(context.Background(), func(ctx context.Context, p partition.Partition, term *tenure.Term) error {
					link.ran.Store(true)
					<-ctx.Done()
					return nil
				})
				if !errors.Is(err, lease.ErrNoSent) {
					t.Fatalf("Run = %v; want an error wrapping lease.ErrNoSent", err)
				}
				if link.ran.Load() == join {
					t.Errorf("a partition function ran: %t; want %t", link.ran.Load(), !join)
				}
				if ms, err := coord.GroupMembers(context.Background(), "jobs"); err != nil || len(ms) != 0 {
					t.Errorf("members after Run returned = %v, %v; want none", ms, err)
				}
			})
		})
	}
}
