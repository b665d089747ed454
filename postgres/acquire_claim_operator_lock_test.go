package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// TestAcquireAndClaimQueuedBehindAnOperatorLock: an operator's transaction
// holds the leadership row of "g/0" (SELECT ... FOR UPDATE, no write)
// while a fresh Coordinator's Acquire of g/0 and a member's claim of
// partition 0 queue behind it, in either order: the Acquire first (its
// statement finds no group tables; the member joins after it, making
// them) or the claim first (the Acquire then finds the tables and waits
// on the claim's partition row). The operator commits. Exactly one of them
// holds g/0: never both, and one of them does.
func TestAcquireAndClaimQueuedBehindAnOperatorLock(t *testing.T) {
	t.Parallel()
	for _, acquireFirst := range []bool{true, false} {
		name := map[bool]string{true: "acquire first", false: "claim first"}[acquireFirst]
		t.Run(name, func(t *testing.T) {
			dsn := newDB(t)
			ctx := ctxFor(t, time.Minute)
			c := open(t, dsn)
			pool := newPool(t, dsn)
			g, err := c.Acquire(ctx, "g/0", "s", time.Minute) // the key's row exists
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Release(ctx, g); err != nil {
				t.Fatal(err)
			}
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, `SELECT 1 FROM public.cluster_leadership WHERE resource = 'g/0' FOR UPDATE`); err != nil {
				t.Fatal(err)
			}
			acquired, claimed := make(chan queued, 1), make(chan queued, 1)
			acquire := func() {
				fresh := open(t, dsn)
				go func() {
					g, err := fresh.Acquire(ctx, "g/0", "single", time.Minute)
					acquired <- queued{g, err}
				}()
			}
			member := open(t, dsn)
			var m partition.Member
			claim := func() {
				if m, err = member.JoinGroup(ctx, "g", "m", time.Minute, 0); err != nil {
					t.Fatal(err)
				}
				go func() {
					res, err := member.ClaimPartitions(ctx, m, []string{"0"})
					if err == nil {
						err = res[0].Err
					}
					var g tenure.Grant
					if err == nil {
						g = res[0].Grant
					}
					claimed <- queued{g, err}
				}()
			}
			first, second := claim, acquire
			if acquireFirst {
				first, second = acquire, claim
			}
			first()
			awaitWaitersOrDone(ctx, t, pool, 1, acquired, claimed)
			second()
			awaitWaitersOrDone(ctx, t, pool, 2, acquired, claimed)
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			a, cl := <-acquired, <-claimed
			t.Logf("Acquire(g/0) = %v, %v; claim of partition 0 = %v, %v", a.g, a.err, cl.g, cl.err)
			var held *tenure.HeldError
			switch {
			case a.err == nil && cl.err == nil:
				lost, cerr := member.CheckPartitions(ctx, m, []tenure.Grant{cl.g})
				t.Errorf("both hold g/0: Acquire = %v and the claim = %v (CheckPartitions after: lost %v, %v)", a.g, cl.g, lost, cerr)
			case a.err != nil && cl.err != nil:
				t.Errorf("neither holds g/0: Acquire: %v; claim: %v", a.err, cl.err)
			case a.err != nil && !errors.As(a.err, &held), cl.err != nil && !errors.As(cl.err, &held):
				t.Errorf("the loser's error is no *tenure.HeldError: Acquire: %v; claim: %v", a.err, cl.err)
			}
		})
	}
}

// queued is the outcome of an Acquire or a claim that queued on a lock.
type queued struct {
	g   tenure.Grant
	err error
}

// awaitWaitersOrDone returns once n sessions wait on a lock, or once one
// of done (buffered) holds a result, whichever comes first.
func awaitWaitersOrDone(ctx context.Context, t *testing.T, pool *pgxpool.Pool, n int, done ...chan queued) {
	t.Helper()
	for {
		var waiting int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatalf("count lock waiters: %v", err)
		}
		if waiting >= n {
			return
		}
		for _, d := range done {
			if len(d) > 0 {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %d lock waiters: %v", n, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
