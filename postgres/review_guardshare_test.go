// Attacks of review-guardshare (issue 34, "safe by class") on the guard's
// record of what a connection prepared and checked (see the package's
// guard), made while that record was shared by the coordinators of one
// pool (kept under the table's quoted name and the holder_id length New
// read); it is each coordinator's own again since
// TestReviewGuardShareClosedCoordinator broke the sharing. Each test looks
// for two coordinators of one pool whose check, or whose statements,
// differ, alters the table in place as an administrator in New York time
// beside a UTC server (newYorkAdmin), and asserts the safe outcome: no
// second holder of a live key.

package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/postgres"
)

// oneConn is dsn for a pool of one connection, on which every coordinator
// of the pool runs its statements.
func oneConn(dsn string) string {
	return pgtest.WithParams(dsn, map[string]string{"pool_max_conns": "1"})
}

// TestReviewGuardShareNotifyModes: c1 (NotifyWatched) and c2 (NotifyAll)
// share one connection and one record (same table, same holder_id length),
// but their acquisitions are two SQL texts. c1 acquires k, which prepares
// and checks its text; expires_at is then altered in place to timestamp,
// which ends h's lease five hours early. c2's Acquire prepares its own
// text only now, after the ALTER, so it must check the table then (the
// record is per SQL text, not per key): ErrTableShape, not a grant of h's
// live key.
func TestReviewGuardShareNotifyModes(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	admin := newYorkAdmin(t, dsn)
	c1 := open(t, oneConn(dsn), postgres.WithNotify(postgres.NotifyWatched))
	c2, err := postgres.New(ctx, c1.Pool(), postgres.WithNotify(postgres.NotifyAll))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	g, err := c1.Acquire(ctx, "k", "h", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `ALTER TABLE `+c1.Table()+` ALTER COLUMN expires_at TYPE timestamp`); err != nil {
		t.Fatal(err)
	}
	if got, err := c2.Acquire(ctx, "k", "other", time.Minute); !errors.Is(err, postgres.ErrTableShape) {
		t.Errorf("c2 (NotifyAll): Acquire(k, other) after expires_at was altered in place, on the connection where c1 (NotifyWatched) prepared and checked its own acquisition, while h holds token %d with %s left = %v, %v; want ErrTableShape",
			g.Token, g.Sent.Add(g.TTL).Until().Round(time.Millisecond), got, err)
	}
}

// TestReviewGuardShareHolderLengthBetweenNews: c1 is made while holder_id
// is text, and acquires k on a pool of one connection; holder_id is then
// altered in place to varchar(300), and c2 is made on c1's pool, so it
// reads a holder_id of 300 characters: two records on one connection. c2
// must check on its own (c1's record is not its own), and serves: h's live
// key is refused to it (a HeldError). c1 must refuse to serve on a
// holder_id that became limited while it ran (ErrTableShape), though c2's
// check passed on the connection both now run on.
func TestReviewGuardShareHolderLengthBetweenNews(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	admin := newYorkAdmin(t, dsn)
	c1 := open(t, oneConn(dsn))
	if _, err := c1.Acquire(ctx, "k", "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `ALTER TABLE `+c1.Table()+` ALTER COLUMN holder_id TYPE varchar(300)`); err != nil {
		t.Fatal(err)
	}
	c2, err := postgres.New(ctx, c1.Pool())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got, err := c2.Acquire(ctx, "k", "other", time.Minute); !isHeld(err) {
		t.Errorf("c2 (made on varchar(300)): Acquire(k, other) while h holds k = %v, %v; want a HeldError", got, err)
	}
	for range 2 { // a refusal is not recorded as a check that passed
		if got, err := c1.Acquire(ctx, "k2", "other", time.Minute); !errors.Is(err, postgres.ErrTableShape) {
			t.Errorf("c1 (made on text): Acquire(k2, other) after holder_id became varchar(300) in place = %v, %v; want ErrTableShape", got, err)
		}
	}
}

// TestReviewGuardShareTempSchema: WithSchema("pg_temp") names the table
// "pg_temp"."cluster_leadership" in every session, the quoted name the
// guard's record is kept under, but pg_temp is each session's own schema:
// two coordinators with the same options, on two connections, each make
// and use a table of their own. The second must not be granted the key the
// first holds.
func TestReviewGuardShareTempSchema(t *testing.T) {
	t.Parallel()
	dsn := oneConn(newDB(t))
	ctx := ctxFor(t, time.Minute)
	c1, err := postgres.Dial(ctx, dsn, postgres.WithSchema("pg_temp"))
	if err != nil {
		t.Logf("Dial(WithSchema(pg_temp)) = %v", err)
		if !errors.Is(err, postgres.ErrTableShape) && !errors.Is(err, postgres.ErrInvalidOption) {
			t.Errorf("Dial(WithSchema(pg_temp)) = %v; want ErrTableShape or ErrInvalidOption", err)
		}
		return
	}
	defer c1.Close()
	g, err := c1.Acquire(ctx, "k", "h", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c2 := open(t, dsn, postgres.WithSchema("pg_temp"))
	if got, err := c2.Acquire(ctx, "k", "other", time.Minute); !isHeld(err) {
		t.Errorf("Acquire(k, other) on %s, another session's, while h holds token %d on %s = %v, %v; want a HeldError",
			c2.Table(), g.Token, c1.Table(), got, err)
	}
}

// TestReviewGuardShareDeallocated: c1 acquires k on a pool of one
// connection, which prepares and checks the acquisition there. Another
// user of the pool deallocates the connection's prepared statements
// (pgx's DeallocateAll, which pgx's own caches follow), and expires_at is
// then altered in place to timestamp. The record still says the
// acquisition was prepared and checked there, but pgx prepares it again,
// after the ALTER, when it next runs: the table must be checked then.
func TestReviewGuardShareDeallocated(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	admin := newYorkAdmin(t, dsn)
	c1 := open(t, oneConn(dsn))
	g, err := c1.Acquire(ctx, "k", "h", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := c1.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = pc.Conn().DeallocateAll(ctx)
	pc.Release()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `ALTER TABLE `+c1.Table()+` ALTER COLUMN expires_at TYPE timestamp`); err != nil {
		t.Fatal(err)
	}
	if got, err := c1.Acquire(ctx, "k", "other", time.Minute); !errors.Is(err, postgres.ErrTableShape) {
		t.Errorf("Acquire(k, other) after the connection's statements were deallocated and expires_at altered in place, while h holds token %d with %s left = %v, %v; want ErrTableShape",
			g.Token, g.Sent.Add(g.TTL).Until().Round(time.Millisecond), got, err)
	}
}

// TestReviewGuardShareTableMadeAgain: c1 runs h's grant of k on a pool of
// one connection, which prepares and checks its statements there. The
// administrator renames the table away (h's row, live, goes with it) and
// makes a new one under the name: a new OID behind the same quoted name.
// c2, made after on c1's pool, shares c1's record, so it checks nothing
// before its first Acquire, and is granted k on the new table. Every
// statement of that SQL text must now mean the new table, for c1 too: h's
// renewal fails (its row is not there), a third holder is refused with a
// HeldError naming other, and other's token is above h's, though the new
// table's tokens start again.
func TestReviewGuardShareTableMadeAgain(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	admin := newYorkAdmin(t, dsn)
	c1 := open(t, oneConn(dsn))
	g1, err := c1.Acquire(ctx, "k", "h", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if g1, err = c1.Renew(ctx, g1); err != nil { // prepares the renewal too
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `BEGIN; ALTER TABLE cluster_leadership RENAME TO old_leadership;
CREATE TABLE cluster_leadership (resource text PRIMARY KEY, holder_id text, fencing_token bigint NOT NULL DEFAULT 0,
  acquired_at timestamptz, expires_at timestamptz NOT NULL DEFAULT '-infinity'); COMMIT`); err != nil {
		t.Fatal(err)
	}
	c2, err := postgres.New(ctx, c1.Pool())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	g2, err := c2.Acquire(ctx, "k", "other", time.Minute)
	if err != nil {
		t.Fatalf("c2: Acquire(k, other) on the table made again = %v", err)
	}
	if g2.Token <= g1.Token {
		t.Errorf("c2: Acquire(k, other) on the table made again = token %d; h's, on the table renamed away, is %d: want a greater one", g2.Token, g1.Token)
	}
	if r, err := c1.Renew(ctx, g1); err == nil {
		t.Errorf("c1: Renew(%s) after the table was made again, while other holds k (token %d) = %v; want an error", g1, g2.Token, r)
	}
	var held *tenure.HeldError
	if _, err := c1.Acquire(ctx, "k", "third", time.Minute); !errors.As(err, &held) || held.Holder != "other" {
		t.Errorf("c1: Acquire(k, third) while other holds k on the table made again = %v; want a HeldError naming other", err)
	}
}

// TestReviewGuardShareClosedCoordinator: c1 acquires k on a pool of one
// connection, which prepares and checks the acquisition there; c2 is made
// on c1's pool, and c1 is closed. The administrator then drops the unique
// index on resource (no result column changes, so PostgreSQL plans the
// statement again without a word) and adds a second, ended row for k.
// c2 has never run a statement: its first Acquire on that connection
// checks the table itself, whatever c1 checked there. (With the record
// shared by the coordinators of a pool, as for a while it was, c2 trusted
// c1's check, made before the change, and granted k to "other" while h
// held it with a minute left.)
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
