package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-dev/tenure"
)

var _ tenure.Coordinator = (*Coordinator)(nil)

// Execer is what the fence helpers and the coordinator need of a database
// handle. *pgxpool.Pool, *pgxpool.Conn, *pgx.Conn and pgx.Tx satisfy it.
// FenceUpdate, FenceGuard.Update and AddFencingColumn take one.
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
// also implements partition.Coordinator and partition.MembersWatcher. It is
// safe for concurrent use. Dial and New make one.
type Coordinator struct {
	pool    markedPool // refusals marked: see refusal
	ownPool bool
	o       options
	table   string // quoted, possibly schema-qualified
	sql     statements
	// holderChars is the length of the table's holder_id when it is a
	// varchar(n), which would cut a longer holder's trailing spaces and
	// store another holder; 0 when it has none.
	holderChars int

	ctx    context.Context // cancelled by Close: ends watchers and the listener
	cancel context.CancelFunc
	wg     sync.WaitGroup // watchers and the listener

	mu       sync.Mutex
	closed   bool
	listener *listener // started by the first Watch
	presence presence  // the keys this coordinator watches, announced to releasers

	groups groupTables // the group tables' names, when sql.acquirePartition is set
	// groupsSeen is whether the last look at the group tables found one: a
	// hint that picks the statement an Acquire of a key that can name a
	// partition tries first (see acquireOnce), never a reason to grant.
	groupsSeen atomic.Bool
}

// statements are the SQL texts, built once with the quoted table name.
type statements struct {
	acquire, lookup, insert, renew, release, leader, observe string
	grant, announce                                          string // parts of acquire
	grantPartition                                           string // grant, above the partition row's token too
	// acquirePartition, acquireUnlessGroups and acquireNoGroups are
	// acquirePartitionSQL, acquireUnlessGroupsSQL and acquireNoGroupsSQL;
	// empty when the table's name leaves no room for the group tables'
	// names.
	acquirePartition, acquireUnlessGroups, acquireNoGroups string
	// removeForeign ends a foreign record's row (RemoveForeign).
	removeForeign string
}

func newStatements(t string, notify Notify) statements {
	// Every function, operator, type and collation is named with its schema,
	// pg_catalog (see the package doc, "Names"): "OPERATOR(pg_catalog.=)"
	// is "=", found in pg_catalog whatever the search_path.
	announce := announceSQL(notify)
	grant := grantSQL("")
	return statements{
		grant: grant,
		// At least the partition row's token, which acquirePartitionSQL
		// made the grant's.
		grantPartition: grantSQL(`, (SELECT fencing_token FROM p)`),
		// The acquisition, plus a notification for watchers (RETURNING
		// runs for the updated row only). The new token is the old one
		// plus one, and never less than the database clock in microseconds
		// since 1970: a row deleted to "unstick" a key, a truncated or
		// re-created table, or a point-in-time restore would otherwise
		// restart tokens at 1, and a resource that has seen higher tokens
		// would reject every new leader (or, worse, a table re-created
		// between two resources' writes would hand out a token twice).
		acquire: `UPDATE ` + t + grant + `
RETURNING fencing_token, ` + announce + `, ` + shapeColumns(""),
		announce: announce,
		lookup:   `SELECT holder_id, fencing_token, expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP, ` + shapeColumns("") + ` FROM ` + t + ` WHERE resource OPERATOR(pg_catalog.=) $1`,
		insert: `INSERT INTO ` + t + ` (resource, holder_id, fencing_token, acquired_at, expires_at)
VALUES ($1, NULL, 0, NULL, '-infinity') ON CONFLICT (resource) DO NOTHING`,
		renew: renewSQL(t),
		release: `UPDATE ` + t + ` SET expires_at = '-infinity'
WHERE resource OPERATOR(pg_catalog.=) $1 AND holder_id OPERATOR(pg_catalog.=) $2
  AND fencing_token OPERATOR(pg_catalog.=) $3 AND expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP
RETURNING ` + announce + `, ` + shapeColumns(""),
		leader: `SELECT holder_id, fencing_token, ` + leftMicros + `, ` + shapeColumns("") + `
FROM ` + t + ` WHERE resource OPERATOR(pg_catalog.=) $1 AND expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP`,
		removeForeign: `WITH r AS (
	UPDATE ` + t + ` SET expires_at = '-infinity'
	WHERE resource OPERATOR(pg_catalog.=) $1 AND COALESCE(holder_id, '') OPERATOR(pg_catalog.=) $2
	  AND fencing_token OPERATOR(pg_catalog.=) $3 AND expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP
	  AND ($5 OR expires_at OPERATOR(pg_catalog.>) (pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) (` + microsInterval("$6") + `)))
	RETURNING resource, ` + shapeColumns("") + `
)
SELECT pg_catalog.pg_notify($4, resource)::pg_catalog.text, ` + shapeColumns("") + ` FROM r`,
		observe: `SELECT holder_id, fencing_token, expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP,
       CASE WHEN expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP THEN ` + leftMicros + ` END, ` + shapeColumns("") + `
FROM ` + t + ` WHERE resource OPERATOR(pg_catalog.=) $1`,
	}
}

// announceSQL is the notification of an acquisition or a release, for
// watchers (at commit, only when a row was updated). With NotifyWatched,
// only while some coordinator watches the key, which it announces with a
// shared advisory lock (see presence): each notifying commit serializes on
// PostgreSQL's global notification queue lock, and nobody needs a
// notification that nobody watches for.
func announceSQL(notify Notify) string {
	announce := "pg_catalog.pg_notify($4, resource)::pg_catalog.text"
	if notify == NotifyWatched {
		announce = "CASE WHEN pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtext($4), pg_catalog.hashtext(resource)) THEN NULL ELSE " + announce + " END"
	}
	return announce
}

// renewSQL is the renewal on table t. It extends from the statement's
// start (no later than the request was sent, as the holder's deadline
// assumes), but tests liveness again after it holds the row's lock, against
// clock_timestamp(): a renewal that waited on the lock past the lease's
// expiry must not revive it. It takes the row lock an UPDATE of non-key
// columns takes (FOR NO KEY UPDATE conflicts with every writer of the row,
// and costs about half of FOR UPDATE followed by the update), and updates
// the row version it locked, found by its ctid (which the lock keeps: no
// one else can write that version until the renewal commits), without a
// second index lookup.
func renewSQL(t string) string {
	return `WITH locked AS MATERIALIZED (
	SELECT ctid, expires_at FROM ` + t + `
	WHERE resource OPERATOR(pg_catalog.=) $1 AND holder_id OPERATOR(pg_catalog.=) $2
	  AND fencing_token OPERATOR(pg_catalog.=) $3 AND expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP
	FOR NO KEY UPDATE
)
UPDATE ` + t + ` AS l
SET expires_at = CURRENT_TIMESTAMP OPERATOR(pg_catalog.+) (` + microsInterval("$4") + `)
FROM locked AS k
WHERE l.ctid OPERATOR(pg_catalog.=) k.ctid AND k.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()
RETURNING ` + shapeColumns("l.")
}

// grantSQL is the SET and WHERE of a grant: the key's row ($1) is free,
// or the holder's own ($2); the token is greater than the row's and every
// floor (", expr" each), and never less than the database clock in µs.
func grantSQL(floors string) string {
	return `
	SET holder_id = $2,
	    fencing_token = GREATEST(fencing_token OPERATOR(pg_catalog.+) 1, ` + clockMicros + floors + `),
	    acquired_at = CURRENT_TIMESTAMP,
	    expires_at = CURRENT_TIMESTAMP OPERATOR(pg_catalog.+) (` + microsInterval("$3") + `)
	WHERE resource OPERATOR(pg_catalog.=) $1
	  AND (expires_at OPERATOR(pg_catalog.<=) CURRENT_TIMESTAMP OR holder_id OPERATOR(pg_catalog.=) $2
	    AND expires_at OPERATOR(pg_catalog.<=) (CURRENT_TIMESTAMP OPERATOR(pg_catalog.+) '1 day'::pg_catalog.interval))`
}

// microsInterval is the interval of the bigint parameter param
// microseconds.
func microsInterval(param string) string {
	return param + `::bigint OPERATOR(pg_catalog.*) interval '1 microsecond'`
}

// New returns a Coordinator that keeps its leases in pool's database. It
// creates the leadership table if it does not exist (CREATE TABLE needs the
// CREATE privilege on the schema; an existing table needs only SELECT,
// INSERT and UPDATE) and checks the shape of an existing one, and its
// owner: this role, the schema's owner, the database's owner or a
// superuser (another's triggers would run as this role). Close does not
// close pool. It lets the coordinator share a pool with other queries;
// Dial makes a pool of its own.
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
	c := &Coordinator{pool: markedPool{Pool: pool}, o: o, table: ident.Sanitize(), presence: presence{keys: map[string]int{}}}
	c.sql = newStatements(c.table, o.notify)
	if t, err := c.groupTables(); err == nil {
		c.groups = t
		c.sql.acquirePartition = acquirePartitionSQL(c.table, t, c.sql)
		c.sql.acquireUnlessGroups = acquireUnlessGroupsSQL(c.table, c.sql)
		c.sql.acquireNoGroups = acquireNoGroupsSQL(c.table, c.sql)
	}
	if err := c.ensureTable(ctx); err != nil {
		return nil, err
	}
	s := c.sql
	c.pool.guard = newGuard(c.table, c.checkTableAgain, s.acquire, s.lookup, s.renew, s.release, s.leader, s.observe, s.removeForeign,
		s.acquirePartition, s.acquireUnlessGroups, s.acquireNoGroups)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// checkTableAgain is the guard's check (see guard): checkTable, and a
// holder_id whose length is now shorter than the one New read (or is
// limited where it was not) is refused, since Acquire checks holders
// against the length New read (holderChars), and a longer holder would be
// stored cut, as another (see checkExactColumns).
func (c *Coordinator) checkTableAgain(ctx context.Context, db Execer) error {
	n, err := checkTable(ctx, db, c.table)
	if err == nil && n > 0 && (c.holderChars == 0 || n < c.holderChars) {
		was := "of no length"
		if c.holderChars > 0 {
			was = fmt.Sprintf("varchar(%d)", c.holderChars)
		}
		return fmt.Errorf("%w: table %s: column %q became varchar(%d) while this coordinator ran (it was %s when the coordinator was made, and holders are checked against that), which would cut a longer holder's trailing spaces and store another holder; make a new coordinator", ErrTableShape, c.table, "holder_id", n, was)
	}
	return err
}

// Dial connects to the server named by dsn (a URL, "postgres://user:pw@host/db",
// or keyword/value, "host=h dbname=db") with a pool of its own, checks that
// it answers, and returns New's Coordinator on it; Close closes the pool.
// Connecting is bounded by the DSN's connect_timeout, or
// DefaultConnectTimeout, and by ctx. Errors name the DSN with its password
// redacted.
func Dial(ctx context.Context, dsn string, opts ...Option) (*Coordinator, error) {
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
		return nil, fmt.Errorf("postgres: connect to %s: %w", RedactDSN(dsn), refusal(err))
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
func (c *Coordinator) Pool() *pgxpool.Pool { return c.pool.Pool }

// Close stops watchers (their channels close) and the listener, and closes
// the pool if Dial made it. It does not release grants. Close is idempotent;
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
// group and wraps a *tenure.HeldError naming the member. The check costs
// a key without '/' no statement, and one that can name a partition one
// statement more while the group tables exist.
// See tenure.Coordinator.Acquire.
func (c *Coordinator) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	if err := tenure.ValidateKey(key); err != nil {
		return tenure.Grant{}, err
	}
	if err := tenure.ValidateHolder(holder); err != nil {
		return tenure.Grant{}, err
	}
	if n := utf8.RuneCountInString(holder); c.holderChars > 0 && n > c.holderChars {
		return tenure.Grant{}, fmt.Errorf("postgres: acquire %q: %w %q: %d characters long; column holder_id of table %s is varchar(%d)", key, tenure.ErrInvalidHolder, holder, n, c.table, c.holderChars)
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
		token, err := c.acquireOnce(ctx, key, holder, us, attempt == 0)
		if err == nil {
			return tenure.Grant{Key: key, Holder: holder, Token: uint64(token), TTL: granted, Sent: sent}, nil
		}
		if errors.Is(err, errRetry) || isDeadlock(err) { // nothing granted: see acquireOnce
			continue
		}
		if isOutOfRange(err) {
			return tenure.Grant{}, fmt.Errorf("postgres: acquire %q: %w: a fencing token of the key is bigint's maximum (a row written by hand or by another program), so no greater token can be granted: %w", key, tenure.ErrRefused, err)
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
