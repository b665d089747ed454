package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tenure-dev/tenure/internal/inputs"
	"github.com/tenure-dev/tenure/partition"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenure-dev/tenure"
)

// clockMicros is the database clock in microseconds since 1970: the floor
// of every partition token, as of the leadership table's (see
// newStatements), so that a partition row deleted, a table truncated or
// re-created, or an older dump restored never makes a token repeat or go
// back (it restarts from the clock, which is past every token granted
// before, unless tokens were granted faster than one per microsecond).
const clockMicros = `(extract(epoch FROM pg_catalog.clock_timestamp()) OPERATOR(pg_catalog.*) 1000000)::bigint`

// ClaimPartitions claims the named partitions for m: it deletes the group's
// expired membership rows (row locks order this against their renewals),
// then, in one REPEATABLE READ transaction, checks that m's row is live,
// takes every named partition that is free or whose owner's row is gone
// with one INSERT … ON CONFLICT (the token is GREATEST(fencing_token + 1,
// the database clock in µs), and that clock for a new row), and reads the owners of
// the rest. See partition.Coordinator.
func (c *Coordinator) ClaimPartitions(ctx context.Context, m partition.Member, names []string) ([]partition.ClaimResult, error) {
	op := fmt.Sprintf("postgres: claim %d partitions for %s", len(names), m)
	t, err := c.beginGroup(ctx, op, m)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, nil
	}
	for _, n := range names {
		if err := inputs.PartitionName(n); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		if err := inputs.Group(m.Group, len(n)); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	sorted := slices.Clone(names) // one lock order for every claimer
	slices.Sort(sorted)
	sorted = slices.Compact(sorted) // a name given twice is claimed once, and answered at each place
	claimed, others, err := c.claim(ctx, t, m, sorted)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	out := make([]partition.ClaimResult, len(names))
	for i, n := range names {
		key := partition.Key(m.Group, n)
		tok, ok := claimed[n]
		o := others[n]
		switch {
		case ok:
		case o.single != "":
			out[i].Err = fmt.Errorf("partition %q of group %q is held as a single key: %w", n, m.Group, &tenure.HeldError{Key: key, Holder: o.single, Token: uint64(o.singleToken)})
			continue
		case o.member != "":
			out[i].Err = &tenure.HeldError{Key: key, Holder: o.member, Token: uint64(o.token)}
			continue
		case o.atMax:
			out[i].Err = fmt.Errorf("partition %q of group %q: %w: a fencing token of key %q is bigint's maximum (a row written by hand or by another program), so no greater token can be granted", n, m.Group, tenure.ErrRefused, key)
			continue
		default:
			out[i].Err = fmt.Errorf("partition %q: neither claimed nor owned", key)
			continue
		}
		out[i].Grant = tenure.Grant{Key: key, Holder: m.ID, Token: uint64(tok), TTL: m.TTL, Sent: m.Sent}
	}
	return out, nil
}

// claimAttempts is how many times claim runs its transaction when
// PostgreSQL refuses it for a concurrent change (SQLSTATE 40001).
const claimAttempts = 4

// claim reaps m's group's expired memberships, then claims the free
// partitions among names in a REPEATABLE READ transaction, and reads the
// owners of the rest. It returns the new tokens and the owners.
//
// Why REPEATABLE READ: the claim takes a row whose owner's membership row
// does not exist, and the membership is read through the statement's
// snapshot, while ON CONFLICT DO UPDATE locks the row's latest version. At
// READ COMMITTED that version may be newer than the snapshot: a member
// that joined and claimed the row after the snapshot was taken (while this
// claim waited on another row's lock) owns it, but its membership row is
// not in the snapshot, so the claim took the row from a live member. At
// REPEATABLE READ, PostgreSQL refuses to lock or update a row version the
// transaction's snapshot does not see (SQLSTATE 40001, serialization
// failure: the transaction is rolled back, nothing is claimed), so every
// row the claim takes or leaves is the version its snapshot sees. That
// version's owner_epoch was written by a claim committed before the
// snapshot, which saw its member's row live; so that row was committed
// before the snapshot too, and if the snapshot does not see it, it was
// deleted before the snapshot, for good (epochs are never reused): the
// owner is gone. A refused transaction is run again with a new snapshot,
// up to claimAttempts times: the change that caused it has committed, so
// the next run sees it (and reports the row held, or claims it if it was
// released). The expired memberships deleted are the group's and those of
// any group that the named partitions' rows name (a row edited by hand, or
// a membership row moved to another group): an expired row is never
// renewed again, whatever its group. They are deleted before the transaction,
// in a statement of their own, so that two members reaping the same row at
// once do not refuse each other's claims; it locks them in epoch order.
//
// Lock order: every statement that locks several partition rows locks them
// in the byte order of their names, whatever the database's collation (the
// claim's INSERT takes its names sorted by COLLATE "C", and ON CONFLICT
// locks each existing row as it meets it, taken or not; a release sorts its
// names in Go, bytewise, and locks each row FOR NO KEY UPDATE in a LATERAL
// subquery, which runs once per name in the order of the unnest, before it
// writes). Under a collation such as en-US, where "a" < "B", a claim sorted
// by the database's order and a release sorted by bytes deadlocked. A
// claim then locks the leadership rows of the keys it claimed, in the same
// order (see claimKeys): always after the partition rows, the order an
// Acquire of a partition's key takes them in (it holds that partition's
// row while it waits for its owner's membership row (FOR SHARE) and then
// the key's leadership row). The other lockers of those rows (renewals,
// leaves, the deletion of expired members; renewals, releases and plain
// acquisitions of a key) take no partition row, and a claim holding a
// leadership row holds its partition's row too, which no Acquire of it
// can then hold. So no two statements wait for each other in a cycle:
// PostgreSQL never aborts one for a deadlock (SQLSTATE 40P01).
//
// Plans: every statement here that looks up a list of partitions (and the
// leadership rows of their keys) does it with one primary-key lookup per
// name, in a LATERAL subquery with LIMIT 1, which the planner cannot turn
// into a join that scans the group: the work grows with the list, not with
// the table, whatever the table's statistics say. (A table just created has
// none; with a join, PostgreSQL planned a nested loop over the group's rows
// and checked 5,000 partitions of 100,000 in 1 s instead of 20 ms.)
//
// One owner per key: a partition whose key has a live grant in the
// leadership table (a single-key Acquire of "group/name") is not claimed.
// A claim writes the leadership row of every key it claims (see
// claimKeys): a claim whose snapshot predates a grant of the key either
// committed first (and the grant, which waited on the row's lock, sees
// its owner) or meets the row's new version, which REPEATABLE READ refuses
// (SQLSTATE 40001), and its next run sees the grant. This holds whatever
// partition rows an admin deleted meanwhile.
func (c *Coordinator) claim(ctx context.Context, t groupTables, m partition.Member, names []string) (claimed map[string]int64, others map[string]owner, err error) {
	if _, err := c.pool.Exec(ctx, `WITH gone AS MATERIALIZED (
	SELECT epoch FROM `+t.members+`
	WHERE (grp OPERATOR(pg_catalog.=) $1
	       OR epoch OPERATOR(pg_catalog.=) ANY(ARRAY(
	          SELECT p.owner_epoch FROM pg_catalog.unnest($2::pg_catalog.text[]) AS n
	          CROSS JOIN LATERAL (SELECT owner_epoch FROM `+t.partitions+`
	                              WHERE grp OPERATOR(pg_catalog.=) $1 AND name OPERATOR(pg_catalog.=) n LIMIT 1) p)))
	  AND expires_at OPERATOR(pg_catalog.<=) CURRENT_TIMESTAMP
	  AND `+groupTablesShapeAt(3)+` IS NULL
	ORDER BY epoch FOR UPDATE
)
DELETE FROM `+t.members+` m USING gone WHERE m.epoch OPERATOR(pg_catalog.=) gone.epoch`, m.Group, names, t.partitions, t.members, c.table); err != nil {
		return nil, nil, fmt.Errorf("delete expired memberships: %w", err)
	}
	for attempt := 1; ; attempt++ {
		err = pgx.BeginTxFunc(ctx, c.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
			if err := c.lockLeadership(ctx, tx, t); err != nil {
				return err
			}
			var err error
			if claimed, err = c.claimTx(ctx, tx, t, m, names); err != nil {
				return err
			}
			others, err = c.readOwners(ctx, tx, t, m.Group, names, claimed)
			return err
		})
		if err == nil || !isSerializationFailure(err) {
			return claimed, others, err
		}
		if attempt == claimAttempts {
			return nil, nil, fmt.Errorf("refused %d times for concurrent changes to its rows, nothing claimed: %w", attempt, err)
		}
	}
}

// lockLeadership locks the leadership table for tx against an ALTER TABLE
// (ACCESS SHARE, which conflicts with ACCESS EXCLUSIVE only) and then
// checks the shape of it and of the group tables again: an ALTER made in
// place after beginGroup's check (an expires_at made timestamp from a
// session west of the server, which makes a live single-key grant of a
// partition's key look expired) committed before the lock, and is seen;
// one made after waits for tx to end. LOCK takes no snapshot, so it must
// be tx's first statement: the snapshot of REPEATABLE READ, taken by the
// check, is then taken after the lock.
func (c *Coordinator) lockLeadership(ctx context.Context, tx pgx.Tx, t groupTables) error {
	if _, err := tx.Exec(ctx, `LOCK TABLE `+c.table+` IN ACCESS SHARE MODE`); err != nil {
		return fmt.Errorf("lock the leadership table: %w", err)
	}
	if err := c.checkGroupTablesOn(ctx, tx, t); err != nil {
		if errors.Is(err, ErrTableShape) {
			return fmt.Errorf("%w: %w", tenure.ErrLost, err)
		}
		return err
	}
	return nil
}

// isSerializationFailure reports whether err is PostgreSQL's SQLSTATE
// 40001: the transaction was rolled back for a concurrent change.
func isSerializationFailure(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40001"
}

// isOutOfRange reports whether err is PostgreSQL's SQLSTATE 22003: a
// value out of its type's range (a token past bigint's maximum).
func isOutOfRange(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "22003"
}

// isDeadlock reports whether err is PostgreSQL's SQLSTATE 40P01: the
// transaction was rolled back to break a cycle of lock waits.
func isDeadlock(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40P01"
}

// claimTx checks m's membership (its row, of m's group) and claims the partitions among names that
// are free or m's own (granted again: see partition.Coordinator);
// it returns their new tokens.
//
// A partition's key has two rows that carry its tokens: the partition's
// row, and the key's leadership row, written by single-key grants. A claim
// draws its token above both, GREATEST(partition row + 1, leadership row +
// 1, clockMicros), and writes it into both (see claimKeys); a single-key
// grant of the key counts the partition's row too (acquirePartitionSQL). So
// either row alone, the other deleted by hand, still holds the key's
// greatest token. A row at bigint's maximum is not claimed (see
// readOwners).
func (c *Coordinator) claimTx(ctx context.Context, tx pgx.Tx, t groupTables, m partition.Member, names []string) (map[string]int64, error) {
	var live bool
	err := tx.QueryRow(ctx, `SELECT true FROM `+t.members+`
WHERE epoch OPERATOR(pg_catalog.=) $1 AND member OPERATOR(pg_catalog.=) $2 AND grp OPERATOR(pg_catalog.=) $3
  AND expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP`, int64(m.Epoch), m.ID, m.Group).Scan(&live)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: membership expired or left", tenure.ErrLost)
	}
	if err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `INSERT INTO `+t.partitions+` AS p (grp, name, owner_epoch, fencing_token)
SELECT $1, n, $2, GREATEST(`+clockMicros+`, coalesce(l.fencing_token, 0) OPERATOR(pg_catalog.+) 1)
FROM pg_catalog.unnest($3::pg_catalog.text[]) AS n
LEFT JOIN LATERAL (SELECT l.expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP AS held, l.fencing_token FROM `+c.table+` l
                   WHERE l.resource OPERATOR(pg_catalog.=) ($1::pg_catalog.text OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) n)
                   LIMIT 1) l ON true
WHERE NOT coalesce(l.held, false) AND coalesce(l.fencing_token, 0) OPERATOR(pg_catalog.<) `+maxToken+`
ORDER BY n COLLATE pg_catalog."C"
ON CONFLICT (grp, name) DO UPDATE
SET owner_epoch = EXCLUDED.owner_epoch, fencing_token = GREATEST(p.fencing_token OPERATOR(pg_catalog.+) 1, EXCLUDED.fencing_token)
WHERE (p.owner_epoch IS NULL OR p.owner_epoch OPERATOR(pg_catalog.=) $2
       OR NOT EXISTS (SELECT 1 FROM `+t.members+` m WHERE m.epoch OPERATOR(pg_catalog.=) p.owner_epoch))
  AND p.fencing_token OPERATOR(pg_catalog.<) `+maxToken+`
RETURNING name, fencing_token`, m.Group, int64(m.Epoch), names)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64)
	var name string
	var tok int64
	if _, err = pgx.ForEachRow(rows, []any{&name, &tok}, func() error {
		out[name] = tok
		return nil
	}); err != nil {
		return nil, err
	}
	return out, c.claimKeys(ctx, tx, m.Group, names, out)
}

// maxToken is bigint's maximum: a row at it has no greater token to give.
const maxToken = `9223372036854775807`

// claimKeys writes the claimed partitions' tokens into their keys'
// leadership rows, with no holder_id (which marks a row a claim wrote: see
// acquireOnce), inserting the rows that do not exist, in the byte order of
// the names. It is what makes a claim meet a single-key grant of the
// same key whatever rows were deleted: at REPEATABLE READ, PostgreSQL
// refuses (SQLSTATE 40001) to write a leadership row that a grant changed
// or inserted after the claim's snapshot, and a grant in flight is waited
// for first; so a claim either committed before a grant's statement
// locked the row (and the grant, which counts the partition's row or waits
// on this row's lock, sees it) or is refused and run again, when its new
// snapshot sees the grant. It locks the rows after the partition rows, the
// order a single-key grant of a partition's key takes them in.
func (c *Coordinator) claimKeys(ctx context.Context, tx pgx.Tx, group string, names []string, claimed map[string]int64) error {
	if len(claimed) == 0 {
		return nil
	}
	keys := make([]string, 0, len(claimed))
	tokens := make([]int64, 0, len(claimed))
	for _, n := range names { // sorted
		if tok, ok := claimed[n]; ok {
			keys = append(keys, partition.Key(group, n))
			tokens = append(tokens, tok)
		}
	}
	tag, err := tx.Exec(ctx, `INSERT INTO `+c.table+` AS l (resource, holder_id, fencing_token, acquired_at, expires_at)
SELECT k.key, NULL, k.tok, NULL, '-infinity'
FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::bigint[])) AS k(key, tok)
ORDER BY k.key COLLATE pg_catalog."C"
ON CONFLICT (resource) DO UPDATE SET holder_id = NULL, fencing_token = GREATEST(l.fencing_token, EXCLUDED.fencing_token)
WHERE l.expires_at OPERATOR(pg_catalog.<=) CURRENT_TIMESTAMP`, keys, tokens)
	if err != nil {
		return fmt.Errorf("write the partitions' tokens into their keys' leadership rows: %w", err)
	}
	if n := tag.RowsAffected(); n != int64(len(keys)) {
		return fmt.Errorf("wrote the tokens of %d of %d claimed partitions into their keys' leadership rows (a key is held as a single key): nothing claimed", n, len(keys))
	}
	return nil
}

// owner is who owns a partition row: the epoch, its token and the member
// (empty when its membership is gone); and the holder of a live
// single-key grant on the partition's key, with its token.
type owner struct {
	epoch, token int64
	member       string
	single       string
	singleToken  int64
	atMax        bool // a token of the key is bigint's maximum
}

// readOwners reads the owners of the partitions among names not in claimed.
func (c *Coordinator) readOwners(ctx context.Context, tx pgx.Tx, t groupTables, group string, names []string, claimed map[string]int64) (map[string]owner, error) {
	var rest []string
	for _, n := range names {
		if _, ok := claimed[n]; !ok {
			rest = append(rest, n)
		}
	}
	out := make(map[string]owner, len(rest))
	if len(rest) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `SELECT r.name, coalesce(p.owner_epoch, 0), coalesce(p.fencing_token, 0), coalesce(m.member, ''),
       coalesce(l.holder_id, ''), coalesce(l.live_token, 0),
       coalesce(p.fencing_token, 0) OPERATOR(pg_catalog.=) `+maxToken+` OR coalesce(l.fencing_token, 0) OPERATOR(pg_catalog.=) `+maxToken+`
FROM pg_catalog.unnest($2::pg_catalog.text[]) AS r(name)
LEFT JOIN LATERAL (SELECT owner_epoch, fencing_token FROM `+t.partitions+`
                   WHERE grp OPERATOR(pg_catalog.=) $1 AND name OPERATOR(pg_catalog.=) r.name LIMIT 1) p ON true
LEFT JOIN LATERAL (SELECT member FROM `+t.members+` WHERE epoch OPERATOR(pg_catalog.=) p.owner_epoch LIMIT 1) m ON true
LEFT JOIN LATERAL (SELECT CASE WHEN expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP THEN holder_id END AS holder_id,
                          CASE WHEN expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP THEN fencing_token END AS live_token,
                          fencing_token
                   FROM `+c.table+`
                   WHERE resource OPERATOR(pg_catalog.=) ($1::pg_catalog.text OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) r.name)
                   LIMIT 1) l ON true`, group, rest)
	if err != nil {
		return nil, fmt.Errorf("read owners: %w", err)
	}
	var name string
	var o owner
	_, err = pgx.ForEachRow(rows, []any{&name, &o.epoch, &o.token, &o.member, &o.single, &o.singleToken, &o.atMax}, func() error {
		out[name] = o
		return nil
	})
	return out, err
}

// ReleasePartitions frees, with one statement, the partitions of gs that m
// still owns with their tokens. It locks their rows in name order first,
// as claims do (see claim).
func (c *Coordinator) ReleasePartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) error {
	op := fmt.Sprintf("postgres: release %d partitions of %s", len(gs), m)
	t, err := c.beginGroup(ctx, op, m)
	if err != nil {
		return err
	}
	gs = slices.SortedFunc(slices.Values(gs), func(a, b tenure.Grant) int { return strings.Compare(a.Key, b.Key) })
	var names []string
	var tokens []int64
	for _, g := range gs {
		if n, ok := strings.CutPrefix(g.Key, m.Group+"/"); ok && g.Token <= 1<<63-1 {
			names = append(names, n)
			tokens = append(tokens, int64(g.Token))
		}
	}
	_, err = c.pool.Exec(ctx, `WITH mine AS MATERIALIZED (
	SELECT p.name FROM ROWS FROM (pg_catalog.unnest($3::pg_catalog.text[]), pg_catalog.unnest($4::bigint[])) AS r(name, tok)
	CROSS JOIN LATERAL (SELECT name FROM `+t.partitions+`
	                    WHERE grp OPERATOR(pg_catalog.=) $1 AND name OPERATOR(pg_catalog.=) r.name
	                      AND owner_epoch OPERATOR(pg_catalog.=) $2 AND fencing_token OPERATOR(pg_catalog.=) r.tok
	                    LIMIT 1 FOR NO KEY UPDATE) p
)
UPDATE `+t.partitions+` p SET owner_epoch = NULL
WHERE p.grp OPERATOR(pg_catalog.=) $1 AND p.name OPERATOR(pg_catalog.=) ANY(ARRAY(SELECT name FROM mine))
  AND p.owner_epoch OPERATOR(pg_catalog.=) $2`,
		m.Group, int64(m.Epoch), names, tokens)
	if err != nil && !isUndefinedTable(err) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// CheckPartitions returns the grants of gs that m no longer owns with their
// tokens, with one query: m's row must be live, and each partition's row
// must still name m's epoch and the grant's token (an UPDATE or DELETE by
// hand, or another member's claim after one, changes that), and so must
// m's row's group (a row moved to another group by hand is lost, as for
// RenewMember). The lookups go
// by primary key, so the work grows with len(gs), not with the group.
func (c *Coordinator) CheckPartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) ([]tenure.Grant, error) {
	op := fmt.Sprintf("postgres: check %d partitions of %s", len(gs), m)
	t, err := c.beginGroup(ctx, op, m)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(gs))
	tokens := make([]int64, 0, len(gs))
	for _, g := range gs {
		n, _ := strings.CutPrefix(g.Key, m.Group+"/")
		names = append(names, n)
		tokens = append(tokens, int64(g.Token))
	}
	var live bool
	var gone []int32 // 1-based positions in gs
	err = c.pool.QueryRow(ctx, `SELECT
  EXISTS (SELECT 1 FROM `+t.members+` WHERE epoch OPERATOR(pg_catalog.=) $2 AND member OPERATOR(pg_catalog.=) $3
          AND grp OPERATOR(pg_catalog.=) $1 AND expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP),
  ARRAY(SELECT r.i::integer
        FROM ROWS FROM (pg_catalog.unnest($4::pg_catalog.text[]), pg_catalog.unnest($5::bigint[])) WITH ORDINALITY AS r(name, tok, i)
        LEFT JOIN LATERAL (SELECT owner_epoch, fencing_token FROM `+t.partitions+`
                           WHERE grp OPERATOR(pg_catalog.=) $1 AND name OPERATOR(pg_catalog.=) r.name LIMIT 1) p ON true
        WHERE NOT coalesce(p.owner_epoch OPERATOR(pg_catalog.=) $2 AND p.fencing_token OPERATOR(pg_catalog.=) r.tok, false)
        ORDER BY r.i)`,
		m.Group, int64(m.Epoch), m.ID, names, tokens).Scan(&live, &gone)
	if isUndefinedTable(err) || (err == nil && !live) {
		return nil, fmt.Errorf("%s: %w: membership expired or left", op, tenure.ErrLost)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	lost := make([]tenure.Grant, 0, len(gone))
	for _, i := range gone {
		lost = append(lost, gs[i-1])
	}
	return lost, nil
}
