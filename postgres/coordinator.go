package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/inputs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-dev/tenure"
)

var (
	_ tenure.Coordinator = (*Coordinator)(nil)
	_ tenure.Coordinator = (*Coordinator)(nil)
)

// Execer is what the fence helpers and the coordinator need of a database
// handle. *pgxpool.Pool, *pgxpool.Conn, *pgx.Conn and pgx.Tx satisfy it.
// Users pass theirs to FenceUpdate, FenceGuard.Update and AddFencingColumn.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

var (
	_ Execer = (*pgxpool.Pool)(nil)
	_ Execer = (*pgxpool.Conn)(nil)
	_ Execer = (*pgx.Conn)(nil)
	_ Execer = (pgx.Tx)(nil)
)

// A Coordinator is a tenure.Coordinator on a PostgreSQL leadership table. It
// also implements tenure.Coordinator and partition.Coordinator. It is safe for
// concurrent use. Users get one from Open or New and pass it to
// tenure.NewElector or partition.New.
type Coordinator struct {
	pool    *pgxpool.Pool
	ownPool bool
	o       options
	table   string // quoted, possibly schema-qualified
	sql     statements

	ctx    context.Context // cancelled by Close: ends watchers and the listener
	cancel context.CancelFunc
	wg     sync.WaitGroup // watchers and the listener

	mu       sync.Mutex
	closed   bool
	listener *listener // started by the first Watch
	presence presence  // the keys this coordinator watches, announced to releasers
}

// statements are the SQL texts, built once with the quoted table name.
type statements struct {
	acquire, lookup, insert, renew, release, leader, observe string
}

func newStatements(t string, notify Notify) statements {
	// Acquisitions and releases notify watchers (at commit, only when a row
	// was updated). With NotifyWatched, only while some coordinator watches
	// the key, which it announces with a shared advisory lock (see
	// presence): each notifying commit serializes on PostgreSQL's global
	// notification queue lock, and nobody needs a notification that nobody
	// watches for.
	announce := "pg_notify($4, resource)::text"
	if notify == NotifyWatched {
		announce = "CASE WHEN pg_try_advisory_xact_lock(hashtext($4), hashtext(resource)) THEN NULL ELSE pg_notify($4, resource)::text END"
	}
	return statements{
		// The acquisition, plus a notification for watchers. The new token is the old one
		// plus one, and never less than the database clock in microseconds
		// since 1970: a row deleted to "unstick" a key, a truncated or
		// re-created table, or a point-in-time restore would otherwise
		// restart tokens at 1, and a resource that has seen higher tokens
		// would reject every new leader (or, worse, a table re-created
		// between two resources' writes would hand out a token twice).
		acquire: `WITH g AS (
	UPDATE ` + t + `
	SET holder_id = $2,
	    fencing_token = GREATEST(fencing_token + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint),
	    acquired_at = CURRENT_TIMESTAMP,
	    expires_at = CURRENT_TIMESTAMP + $3::bigint * interval '1 microsecond'
	WHERE resource = $1 AND (expires_at <= CURRENT_TIMESTAMP OR holder_id = $2)
	RETURNING resource, fencing_token
)
SELECT fencing_token, ` + announce + ` FROM g`,
		lookup: `SELECT holder_id, fencing_token, expires_at > CURRENT_TIMESTAMP FROM ` + t + ` WHERE resource = $1`,
		insert: `INSERT INTO ` + t + ` (resource, holder_id, fencing_token, acquired_at, expires_at)
VALUES ($1, NULL, 0, NULL, '-infinity') ON CONFLICT (resource) DO NOTHING`,
		// A renewal extends from the statement's start (no later than the
		// request was sent, as the holder's deadline assumes), but tests
		// liveness again after it holds the row's lock, against
		// clock_timestamp(): a renewal that waited on the lock past the
		// lease's expiry must not revive it. It takes the row lock an
		// UPDATE of non-key columns takes (FOR NO KEY UPDATE conflicts with
		// every writer of the row, and costs about half of FOR UPDATE
		// followed by the update).
		renew: `WITH locked AS MATERIALIZED (
	SELECT resource, expires_at FROM ` + t + `
	WHERE resource = $1 AND holder_id = $2 AND fencing_token = $3
	  AND expires_at > CURRENT_TIMESTAMP
	FOR NO KEY UPDATE
)
UPDATE ` + t + ` AS l
SET expires_at = CURRENT_TIMESTAMP + $4::bigint * interval '1 microsecond'
FROM locked AS k
WHERE l.resource = k.resource AND k.expires_at > clock_timestamp()
RETURNING 1`,
		release: `WITH r AS (
	UPDATE ` + t + ` SET expires_at = '-infinity'
	WHERE resource = $1 AND holder_id = $2 AND fencing_token = $3
	  AND expires_at > CURRENT_TIMESTAMP
	RETURNING resource
)
SELECT ` + announce + ` FROM r`,
		leader: `SELECT holder_id, fencing_token, ` + leftMicros + `
FROM ` + t + ` WHERE resource = $1 AND expires_at > CURRENT_TIMESTAMP`,
		observe: `SELECT holder_id, fencing_token, expires_at > CURRENT_TIMESTAMP,
       CASE WHEN expires_at > CURRENT_TIMESTAMP
            THEN ` + leftMicros + ` END
FROM ` + t + ` WHERE resource = $1`,
	}
}

// New returns a Coordinator that keeps its leases in pool's database. It
// creates the leadership table if it does not exist (CREATE TABLE needs the
// CREATE privilege on the schema; an existing table needs only SELECT,
// INSERT and UPDATE) and checks the shape of an existing one. Close does not
// close pool. Users who share a pool with their own queries call it, as
// `tenure demo` does; Open makes the pool.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Coordinator, error) {
	if pool == nil {
		return nil, errors.New("postgres: New: pool is nil")
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	ident := pgx.Identifier{o.table}
	if o.schema != "" {
		ident = pgx.Identifier{o.schema, o.table}
	}
	c := &Coordinator{pool: pool, o: o, table: ident.Sanitize(), presence: presence{keys: map[string]int{}}}
	c.sql = newStatements(c.table, o.notify)
	if err := c.ensureTable(ctx); err != nil {
		return nil, err
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Open connects to the server named by dsn (a URL, "postgres://user:pw@host/db",
// or keyword/value, "host=h dbname=db") with a pool of its own, checks that
// it answers, and returns New's Coordinator on it; Close closes the pool.
// Connecting is bounded by the DSN's connect_timeout, or
// DefaultConnectTimeout, and by ctx. Errors name the DSN with its password
// redacted. Users call it with their DSN, as the tenure command does.
func Open(ctx context.Context, dsn string, opts ...Option) (*Coordinator, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		detail, ok := scrub(err.Error(), dsn)
		if !ok {
			detail = "cannot parse it"
		}
		return nil, fmt.Errorf("%w %s: %s", ErrInvalidDSN, RedactDSN(dsn), detail)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open %s: %w", RedactDSN(dsn), err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect to %s: %w", RedactDSN(dsn), err)
	}
	c, err := New(ctx, pool, opts...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	c.ownPool = true
	return c, nil
}

// Table returns the leadership table's name as it appears in SQL (quoted,
// schema-qualified when WithSchema was given).
func (c *Coordinator) Table() string { return c.table }

// Pool returns the pool the coordinator uses.
func (c *Coordinator) Pool() *pgxpool.Pool { return c.pool }

// Close stops watchers (their channels close) and the listener, and closes
// the pool if Open made it. It does not release grants. Close is idempotent;
// the coordinator's methods return tenure.ErrClosed afterwards.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	c.closePresence()
	if c.ownPool {
		c.pool.Close()
	}
	return nil
}

func (c *Coordinator) checkOpen() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return tenure.ErrClosed
	}
	return nil
}

// micros converts a validated TTL to whole microseconds, the database's
// resolution, and back.
func micros(ttl time.Duration) (int64, time.Duration) {
	us := ttl.Microseconds()
	return us, time.Duration(us) * time.Microsecond
}

// Acquire grants key to holder for ttl with the UPDATE of the package doc, inserting the
// key's row first if this is its first acquisition. A key that names a
// partition of a group (partition.Key: the group, '/', the name)
// owned by a live member is held: the error names the partition and the
// group and wraps a *tenure.HeldError naming the member (see acquireOnce).
// See tenure.Coordinator.Acquire.
func (c *Coordinator) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	if err := tenure.ValidateKey(key); err != nil {
		return tenure.Grant{}, err
	}
	if err := tenure.ValidateHolder(holder); err != nil {
		return tenure.Grant{}, err
	}
	if err := tenure.ValidateTTL(ttl); err != nil {
		return tenure.Grant{}, err
	}
	if err := c.checkOpen(); err != nil {
		return tenure.Grant{}, err
	}
	us, granted := micros(ttl)
	// Each pass either grants, finds a live holder, or saw the key free
	// (inserted, released or expired) between two statements; the last is a
	// race with another node and is retried a few times.
	for attempt := 0; attempt < 8; attempt++ {
		sent := tenure.Now()
		token, err := c.acquireOnce(ctx, key, holder, us)
		if err == nil {
			return tenure.Grant{Key: key, Holder: holder, Token: uint64(token), TTL: granted, Sent: sent}, nil
		}
		if isDeadlock(err) { // rolled back, nothing granted: see acquireOnce
			continue
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return tenure.Grant{}, fmt.Errorf("postgres: acquire %q: %w", key, err)
		}
		var cur pgtype.Text
		var curToken int64
		var live bool
		err = c.pool.QueryRow(ctx, c.sql.lookup, key).Scan(&cur, &curToken, &live)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			if _, err := c.pool.Exec(ctx, c.sql.insert, key); err != nil {
				return tenure.Grant{}, fmt.Errorf("postgres: acquire %q: insert its row: %w", key, err)
			}
			continue
		case err != nil:
			return tenure.Grant{}, fmt.Errorf("postgres: acquire %q: read its holder: %w", key, err)
		case live && cur.Valid:
			return tenure.Grant{}, &tenure.HeldError{Key: key, Holder: cur.String, Token: uint64(curToken)}
		case live: // not a grant: see ListForeign
			return tenure.Grant{}, &tenure.HeldError{Key: key, Token: uint64(curToken)}
		}
	}
	return tenure.Grant{}, fmt.Errorf("postgres: acquire %q: the key changed hands during every attempt; try again", key)
}

// acquireOnce runs the acquisition statement. When key can name a
// partition ("group/name") and the group tables exist, it runs it in a
// transaction that first writes the partition's row (inserting it,
// ownerless, if there is none; rewriting it unchanged otherwise), which
// locks it, and then reads whether its owner's membership is live, with a
// snapshot taken after the lock: a live owner refuses the key. The write
// orders the two APIs: an Acquire that waited for a claim's row lock then
// sees the claimer, and a claim whose snapshot predates the write is
// refused by REPEATABLE READ and run again, when it sees the grant (see
// claim). An Acquire that found no group tables writes the partition's row
// after the key's: if the tables appear meanwhile and another Acquire of
// the key writes the partition's row and waits for the key's, PostgreSQL
// aborts one of the two for a deadlock (SQLSTATE 40P01), which Acquire
// runs again (it then finds the tables).
func (c *Coordinator) acquireOnce(ctx context.Context, key, holder string, us int64) (int64, error) {
	var token int64
	acquire := func(db Execer) error {
		return db.QueryRow(ctx, c.sql.acquire, key, holder, us, c.o.channel).Scan(&token, nil)
	}
	i := strings.LastIndexByte(key, '/')
	t, err := c.groupTables()
	if i < 0 || err != nil || tenure.ValidateKey(key[:i]) != nil || inputs.PartitionName(key[i+1:]) != nil {
		return token, acquire(c.pool) // no partition has this key
	}
	group, name := key[:i], key[i+1:]
	groups := func(db Execer) (bool, error) {
		var ok bool
		err := db.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL`, t.partitions, t.members).Scan(&ok)
		if err != nil {
			return false, fmt.Errorf("look up group tables: %w", err)
		}
		return ok, nil
	}
	unowned := func(tx pgx.Tx) error { return c.unownedPartition(ctx, tx, t, key, group, name) }
	err = pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		ok, err := groups(tx)
		if err != nil {
			return err
		}
		if ok {
			if err := unowned(tx); err != nil {
				return err
			}
			return acquire(tx)
		}
		// No group yet: acquire, then look again. A group whose tables
		// were made, and whose member claimed this key, while the acquire
		// waited on the key's row lock is seen now, and refuses it. (The
		// catalog lookup above may not see tables made during this
		// transaction: the partition's row is written in a savepoint, and
		// a missing table means there is still no group.)
		if err := acquire(tx); err != nil {
			return err
		}
		sp, err := tx.Begin(ctx)
		if err != nil {
			return err
		}
		if err := unowned(sp); err != nil {
			if isUndefinedTable(err) {
				return sp.Rollback(ctx)
			}
			return err
		}
		return sp.Commit(ctx)
	})
	return token, err
}

// unownedPartition writes the row of partition name of group (key) in tx,
// inserting it ownerless if there is none (a claim that began before this
// write then fails and runs again, seeing the grant), and refuses a
// partition a live member owns.
func (c *Coordinator) unownedPartition(ctx context.Context, tx pgx.Tx, t groupTables, key, group, name string) error {
	var epoch, ptok int64
	if err := tx.QueryRow(ctx, `INSERT INTO `+t.partitions+` AS p (grp, name, owner_epoch, fencing_token)
VALUES ($1, $2, NULL, `+clockMicros+`)
ON CONFLICT (grp, name) DO UPDATE SET fencing_token = p.fencing_token
RETURNING coalesce(p.owner_epoch, 0), p.fencing_token`, group, name).Scan(&epoch, &ptok); err != nil {
		return fmt.Errorf("lock partition %q of group %q: %w", name, group, err)
	}
	var member string
	err := tx.QueryRow(ctx, `SELECT member FROM `+t.members+` WHERE epoch = $1 AND expires_at > CURRENT_TIMESTAMP`, epoch).Scan(&member)
	switch {
	case err == nil:
		return fmt.Errorf("partition %q of group %q is owned by member %q: %w", name, group, member, &tenure.HeldError{Key: key, Holder: member, Token: uint64(ptok)})
	case !errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("read the owner of partition %q of group %q: %w", name, group, err)
	}
	return nil
}

// Renew extends g by its TTL from now on the database's clock, if g is still
// the live grant on its key, with one statement. See
// tenure.Coordinator.Renew.
func (c *Coordinator) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	if err := g.Validate(); err != nil {
		return tenure.Grant{}, fmt.Errorf("postgres: renew %v: %w", g, err)
	}
	if err := tenure.ValidateTTL(g.TTL); err != nil {
		return tenure.Grant{}, fmt.Errorf("postgres: renew %v: %w", g, err)
	}
	if g.Token > math.MaxInt64 {
		return tenure.Grant{}, fmt.Errorf("postgres: renew %v: %w: token %d exceeds bigint", g, tenure.ErrInvalidGrant, g.Token)
	}
	if err := c.checkOpen(); err != nil {
		return tenure.Grant{}, err
	}
	us, granted := micros(g.TTL)
	sent := tenure.Now()
	tag, err := c.pool.Exec(ctx, c.sql.renew, g.Key, g.Holder, int64(g.Token), us)
	if err != nil {
		return tenure.Grant{}, fmt.Errorf("postgres: renew %v: %w", g, err)
	}
	if tag.RowsAffected() != 1 {
		return tenure.Grant{}, fmt.Errorf("postgres: renew %v: %w (expired, released or superseded)", g, tenure.ErrLost)
	}
	g.TTL, g.Sent = granted, sent
	return g, nil
}

// Release ends g now, if it is still the live grant on its key, and notifies
// watchers. See tenure.Coordinator.Release.
func (c *Coordinator) Release(ctx context.Context, g tenure.Grant) error {
	if err := g.Validate(); err != nil {
		return fmt.Errorf("postgres: release %v: %w", g, err)
	}
	if err := c.checkOpen(); err != nil {
		return err
	}
	if g.Token > math.MaxInt64 {
		return nil // cannot be one of ours, so it is not live
	}
	if _, err := c.pool.Exec(ctx, c.sql.release, g.Key, g.Holder, int64(g.Token), c.o.channel); err != nil {
		return fmt.Errorf("postgres: release %v: %w", g, err)
	}
	return nil
}

// Leader returns the live grant on key. Its TTL is the time left on the
// lease, on the database's clock, when it was read.
func (c *Coordinator) Leader(ctx context.Context, key string) (tenure.Grant, bool, error) {
	if err := tenure.ValidateKey(key); err != nil {
		return tenure.Grant{}, false, err
	}
	if err := c.checkOpen(); err != nil {
		return tenure.Grant{}, false, err
	}
	return c.leader(ctx, key)
}

func (c *Coordinator) leader(ctx context.Context, key string) (tenure.Grant, bool, error) {
	var holder pgtype.Text
	var token, leftUS int64
	err := c.pool.QueryRow(ctx, c.sql.leader, key).Scan(&holder, &token, &leftUS)
	if errors.Is(err, pgx.ErrNoRows) {
		return tenure.Grant{}, false, nil
	}
	if err != nil {
		return tenure.Grant{}, false, fmt.Errorf("postgres: leader %q: %w", key, err)
	}
	// A live row without holder_id is not a grant, but Acquire refuses it:
	// held, by holder "" (see ListForeign).
	return tenure.Grant{Key: key, Holder: holder.String, Token: uint64(token), TTL: time.Duration(max(leftUS, 1)) * time.Microsecond}, true, nil
}
