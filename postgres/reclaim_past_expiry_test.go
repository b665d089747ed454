package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestReclaimBlockedPastExpiryRacesAcquire: member a owns
// partition 0; a's re-claim of it takes its snapshot (and checks a's
// membership) just before a's membership expires, then waits on the
// partition row's lock (held by an operator's SELECT … FOR UPDATE) until
// after it has expired; meanwhile an Acquire of the partition's key, begun
// after the expiry, waits on the same lock. The lock is let go: a's
// re-claim goes first (it writes the row: owner_epoch = a's, so the
// re-claim branch takes it without asking whether a's row still exists),
// then the Acquire sees a's membership expired and grants the key. It
// tries to make both hold at once: a's claim must fail, or grant a
// partition whose lease (Sent + TTL, a's last renewal) had ended before
// the Acquire was sent; and a's CheckPartitions must not keep it. It
// passed when written: kept as a regression test.
func TestReclaimBlockedPastExpiryRacesAcquire(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	ca, cx := open(t, dsn), open(t, dsn)
	pool := newPool(t, dsn)
	const ttl = 2 * time.Second
	a, err := ca.JoinGroup(ctx, "jobs", "a", ttl, 1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ca.ClaimPartitions(ctx, a, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	first := res[0].Grant
	if a, err = ca.RenewMember(ctx, a); err != nil {
		t.Fatal(err)
	}
	expiry := a.Sent.Add(ttl)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+partitionsTable+` WHERE grp = 'jobs' AND name = '0' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	type claimed struct {
		g    tenure.Grant
		err  error
		done tenure.Instant
	}
	claimDone := make(chan claimed, 1)
	time.Sleep(expiry.Until() - 300*time.Millisecond)
	go func() {
		res, err := ca.ClaimPartitions(ctx, a, []string{"0"})
		c := claimed{err: err, done: tenure.Now()}
		if err == nil {
			c.g, c.err = res[0].Grant, res[0].Err
		}
		claimDone <- c
	}()
	time.Sleep(expiry.Until() + 400*time.Millisecond)
	type acquired struct {
		g    tenure.Grant
		err  error
		sent tenure.Instant
	}
	acqDone := make(chan acquired, 1)
	go func() {
		sent := tenure.Now()
		g, err := cx.Acquire(ctx, "jobs/0", "x", time.Minute)
		acqDone <- acquired{g, err, sent}
	}()
	time.Sleep(300 * time.Millisecond)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	ac, xg := <-claimDone, <-acqDone
	t.Logf("a's first grant %d; a's re-claim: %+v, %v; x's Acquire: %+v, %v", first.Token, ac.g, ac.err, xg.g, xg.err)
	if xg.err != nil {
		t.Fatalf("x's Acquire after a's membership expired = %v; want a grant (the race did not happen)", xg.err)
	}
	if ac.err == nil {
		if !ac.g.Sent.Add(ac.g.TTL).Time().Before(xg.sent.Time()) {
			t.Errorf("a's re-claim granted %+v, whose lease (Sent + TTL) outlasts the send of x's Acquire, granted %+v: two holders", ac.g, xg.g)
		}
		if ac.g.Token >= xg.g.Token {
			t.Errorf("x's token %d is not greater than a's re-claim's %d, granted before it", xg.g.Token, ac.g.Token)
		}
		if lost, err := ca.CheckPartitions(ctx, a, []tenure.Grant{ac.g}); !errors.Is(err, tenure.ErrLost) {
			t.Errorf("a's CheckPartitions(%+v) while x holds the key = %v, %v; want ErrLost", ac.g, lost, err)
		}
	}
}
