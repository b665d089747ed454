//go:build openfinding

// Open finding of review-guardshare (issue 34): the guard's record shared
// by the coordinators of one pool (commit 2f707e1) lets a coordinator made
// before an in-place change that leaves every column as it was run its
// first statement on a connection without checking the table, on the word
// of another coordinator's check made before the change (here, one since
// closed). Before 2f707e1, each coordinator checked the table before its
// first statement on each connection, and this test passed (c2 refused
// ErrTableShape: "column \"resource\" has no unique index").
//
// Run: go test -tags openfinding -count=1 -run TestReviewGuardShareClosedCoordinator ./postgres/
//
// What it shows: c2 grants k to "other" while h holds it with a minute
// left (two holders of one key). docs/postgresql.md names such changes
// ("seen only by a new coordinator"), and c2 was made before the change,
// so the docs hold as written; what changed is that a coordinator made
// later on the pool no longer looks at the table on a connection another
// coordinator already used.

package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-dev/tenure/postgres"
)

// TestReviewGuardShareClosedCoordinator: c1 acquires k on a pool of one
// connection, which prepares and checks the acquisition there; c2 is made
// on c1's pool, and c1 is closed. The administrator then drops the unique
// index on resource (no result column changes, so PostgreSQL plans the
// statement again without a word) and adds a second, ended row for k.
// c2 has never run a statement: its first Acquire on that connection
// trusts the record c1 left.
func TestReviewGuardShareClosedCoordinator(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	admin := newYorkAdmin(t, dsn)
	pool, err := pgxpool.New(ctx, oneConn(dsn))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	c1, err := postgres.New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	g, err := c1.Acquire(ctx, "k", "h", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := postgres.New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `ALTER TABLE `+c2.Table()+` DROP CONSTRAINT cluster_leadership_pkey;
INSERT INTO `+c2.Table()+` (resource) VALUES ('k')`); err != nil {
		t.Fatal(err)
	}
	if got, err := c2.Acquire(ctx, "k", "other", time.Minute); !errors.Is(err, postgres.ErrTableShape) && !isHeld(err) {
		t.Errorf("c2: Acquire(k, other) after resource's unique index was dropped and a second row of k added, while h holds token %d with %s left = token %d, %v; want ErrTableShape or a HeldError",
			g.Token, g.Sent.Add(g.TTL).Until().Round(time.Millisecond), got.Token, err)
	}
}
