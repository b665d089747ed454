package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/postgres"
)

// TestRenewMemberWaitingPastExpiryRevivesNothing (an adversary's attack): a
// member's renewal starts before its
// lease ends, then waits on its row's lock (an operator's FOR SHARE read)
// past the end; meanwhile an Elector acquires the key of the member's
// partition. The renewal must not revive the lease.
func TestRenewMemberWaitingPastExpiryRevivesNothing(t *testing.T) {
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	elector, member := open(t, dsn), open(t, dsn)
	pool := newPool(t, dsn)
	const ttl = 5 * time.Second
	m, err := member.JoinGroup(ctx, "jobs", "member#1", ttl, 0)
	if err != nil {
		t.Fatal(err)
	}
	joined := time.Now()
	res, err := member.ClaimPartitions(ctx, m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+membersTable+` WHERE epoch = $1 FOR SHARE`, int64(m.Epoch)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	time.Sleep(time.Until(joined.Add(ttl * 2 / 5))) // the renewal starts well before the lease ends
	go func() {
		m2, err := member.RenewMember(ctx, m)
		if err == nil {
			m = m2
		}
		done <- err
	}()
	waitUntil(t, 20*time.Second, "the renewal waits on the row lock", func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%members%'`).Scan(&n)
		return err == nil && n == 1
	})
	if time.Since(joined) > ttl*4/5 {
		t.Fatalf("the renewal reached the row lock %s after the join; want it waiting before %s, while the lease is live", time.Since(joined), ttl*4/5)
	}
	time.Sleep(time.Until(joined.Add(ttl + 300*time.Millisecond)))
	g, aerr := elector.Acquire(ctx, "jobs/0", "elector#1", time.Minute)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rerr := <-done
	t.Logf("Acquire after the lease ended: %+v, %v; the renewal that waited: %v", g, aerr, rerr)
	if aerr == nil && rerr == nil {
		lost, cerr := member.CheckPartitions(ctx, m, []tenure.Grant{res[0].Grant})
		_, rerr2 := member.RenewMember(ctx, m)
		t.Errorf("jobs/0 held by elector#1 (token %d) and, after its renewal revived the lease, by member#1 (token %d; CheckPartitions lost %v, %v; next renewal %v)",
			g.Token, res[0].Grant.Token, lost, cerr, rerr2)
	}
}

// TestRenewalAfterLockWaitDoesNotRevive: a renewal is sent before the
// lease expires, but waits on the row's lock (a long transaction holds it)
// until after the expiry. It must report the grant lost, not extend a lease
// that expired while it waited.
func TestRenewalAfterLockWaitDoesNotRevive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		renew func(ctx context.Context, c *postgres.Coordinator, g, other tenure.Grant) error
	}{
		{"Renew", func(ctx context.Context, c *postgres.Coordinator, g, _ tenure.Grant) error {
			_, err := c.Renew(ctx, g)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := newDB(t)
			pool := newPool(t, dsn)
			c := open(t, dsn)
			ctx := ctxFor(t, 30*time.Second)
			g, err := c.Acquire(ctx, "k", "a", time.Second)
			if err != nil {
				t.Fatal(err)
			}
			other, err := c.Acquire(ctx, "other", "a", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background())
			if _, err := tx.Exec(ctx, `SELECT 1 FROM public.cluster_leadership WHERE resource = 'k' FOR UPDATE`); err != nil {
				t.Fatal(err)
			}
			renewed := make(chan error, 1)
			go func() { renewed <- tc.renew(ctx, c, g, other) }()
			time.Sleep(1500 * time.Millisecond) // the lease (1s) expires while the renewal waits
			select {
			case err := <-renewed:
				t.Fatalf("renewal returned %v while the row was locked; want it to wait", err)
			default:
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-renewed; !errors.Is(err, tenure.ErrLost) {
				t.Fatalf("renewal that waited past the expiry = %v; want ErrLost", err)
			}
		})
	}
}
