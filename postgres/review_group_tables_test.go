package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"
)

// groupTablesScene is a database whose server runs UTC, where member m of
// group jobs (on coordinator mc) owns partitions 0 and 1 with a minute's
// lease, and an Elector's coordinator ec runs no group operation. Both
// coordinators' Acquire saw the group tables of tenure's shape before the
// attack, so a coordinator that trusted what it once saw would be caught.
// admin is a connection of
// the tables' owner, an administrator's psql in New York time.
type groupTablesScene struct {
	admin  *pgx.Conn
	mc, ec *postgres.Coordinator
	m      partition.Member
}

func newGroupTablesScene(t *testing.T) groupTablesScene {
	t.Helper()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	s := groupTablesScene{admin: newYorkAdmin(t, dsn), mc: open(t, dsn), ec: open(t, dsn)}
	s.m = join(ctx, t, s.mc, "m")
	if res, err := s.mc.ClaimPartitions(ctx, s.m, []string{"0", "1"}); err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("ClaimPartitions(m, 0 1) = %+v, %v", res, err)
	}
	for _, c := range []*postgres.Coordinator{s.mc, s.ec} {
		g, err := c.Acquire(ctx, "jobs/9", "seen", time.Minute)
		if err != nil {
			t.Fatalf("Acquire(jobs/9) beside tenure's group tables = %v", err)
		}
		if err := c.Release(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// newYorkAdmin makes dsn's database run UTC for every new session and
// returns a connection of its owner whose own session runs New York time,
// as an administrator's psql elsewhere would.
func newYorkAdmin(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(ctxFor(t, 10*time.Second)) })
	if _, err := admin.Exec(ctx, `DO $$BEGIN EXECUTE pg_catalog.format('ALTER DATABASE %I SET TimeZone = ''UTC''', current_database()); END$$`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `SET TimeZone = 'America/New_York'`); err != nil {
		t.Fatal(err)
	}
	return admin
}

// newGroupTablesSceneAfter is newGroupTablesScene once its admin has run
// ddl.
func newGroupTablesSceneAfter(t *testing.T, ddl string) groupTablesScene {
	t.Helper()
	s := newGroupTablesScene(t)
	if _, err := s.admin.Exec(ctxFor(t, 30*time.Second), ddl); err != nil {
		t.Fatal(err)
	}
	return s
}

// acquire runs Acquire(jobs/<part>) on ec, then on mc, as another holder
// than m, and returns what each answered, by coordinator.
func (s groupTablesScene) acquire(t *testing.T, part string) map[string]error {
	t.Helper()
	out := make(map[string]error)
	for who, c := range map[string]*postgres.Coordinator{"the Elector's coordinator": s.ec, "the member's coordinator": s.mc} {
		g, err := c.Acquire(ctxFor(t, 30*time.Second), "jobs/"+part, "e", time.Minute)
		if err == nil {
			err = errors.New("granted")
			t.Logf("Acquire(jobs/%s) on %s granted token %d with %s of m's lease left", part, who, g.Token, s.m.Sent.Add(s.m.TTL).Until().Round(time.Millisecond))
		}
		out[who] = err
	}
	return out
}

// TestReviewGroupTablesTablesMadeAgain: the members table made again, in
// one transaction that keeps its rows, of a shape that ends every
// membership hours early (expires_at timestamp, filled from New York
// time while the server runs UTC), or the two tables' names swapped, or the
// members table moved out of the schema and another moved in: the tables
// Acquire finds are another pair of OIDs, so it reads their shape and
// refuses m's partition (ErrTableShape), on either coordinator.
func TestReviewGroupTablesTablesMadeAgain(t *testing.T) {
	t.Parallel()
	const remake = `ALTER TABLE cluster_leadership_members RENAME TO old_members;
CREATE TABLE cluster_leadership_members (LIKE old_members INCLUDING ALL);
ALTER TABLE cluster_leadership_members ALTER COLUMN expires_at TYPE timestamp;
INSERT INTO cluster_leadership_members OVERRIDING SYSTEM VALUE SELECT * FROM old_members;`
	for name, ddl := range map[string]string{
		"made_again": `BEGIN;` + remake + `DROP TABLE old_members; COMMIT`,
		"swapped": `BEGIN; ALTER TABLE cluster_leadership_members RENAME TO x;
ALTER TABLE cluster_leadership_partitions RENAME TO cluster_leadership_members;
ALTER TABLE x RENAME TO cluster_leadership_partitions; COMMIT`,
		"set_schema": `BEGIN; CREATE SCHEMA aside; CREATE SCHEMA spare; ` + remake + `
ALTER TABLE old_members SET SCHEMA aside; ALTER TABLE cluster_leadership_members SET SCHEMA spare;
ALTER TABLE spare.cluster_leadership_members SET SCHEMA public; COMMIT`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newGroupTablesSceneAfter(t, ddl)
			for who, err := range s.acquire(t, "0") {
				if !errors.Is(err, postgres.ErrTableShape) {
					t.Errorf("Acquire(jobs/0) on %s beside group tables made again (%s) while m owns partition 0 = %v; want ErrTableShape", who, name, err)
				}
			}
		})
	}
}

// TestReviewGroupTablesCollationInPlace: the partitions' names (and so
// their primary key) altered in place to a case-insensitive collation, or
// a second unique index under one made on them: m's partitions 0 and A
// (as "jobs/a") are refused to a single key on either coordinator, with
// ErrTableShape naming the collation (or, were the shape not read again,
// as held by m: the partition's row is still found, since a
// nondeterministic collation only makes more names one, and ON CONFLICT
// takes every unique index on grp and name as its arbiter).
func TestReviewGroupTablesCollationInPlace(t *testing.T) {
	t.Parallel()
	for name, ddl := range map[string]string{
		"altered": `ALTER TABLE cluster_leadership_partitions ALTER COLUMN name TYPE pg_catalog.text COLLATE case_insensitive,
	ALTER COLUMN grp TYPE pg_catalog.text COLLATE case_insensitive`,
		"unique_index": `CREATE UNIQUE INDEX ci ON cluster_leadership_partitions (grp, name COLLATE case_insensitive)`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newGroupTablesScene(t)
			ctx := ctxFor(t, 30*time.Second)
			if res, err := s.mc.ClaimPartitions(ctx, s.m, []string{"A"}); err != nil || res[0].Err != nil {
				t.Fatalf("ClaimPartitions(m, A) = %+v, %v", res, err)
			}
			if _, err := s.admin.Exec(ctx, `CREATE COLLATION case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
`+ddl); err != nil {
				t.Fatal(err)
			}
			for _, part := range []string{"0", "a"} {
				for who, err := range s.acquire(t, part) {
					var held *tenure.HeldError
					if !(errors.As(err, &held) && held.Holder == "m") && !errors.Is(err, postgres.ErrTableShape) {
						t.Errorf("Acquire(jobs/%s) on %s beside partition names under a case-insensitive collation (%s in place), while m owns it = %v; want a HeldError naming m or ErrTableShape", part, who, name, err)
					}
				}
			}
		})
	}
}

// TestReviewGroupTablesShadowTables: a role that may create tables in a
// schema on the coordinators' search_path before public (its own, open to
// every role) makes tables named as the group tables there, empty, after
// the coordinators' Acquire saw tenure's. The group tables are named with
// their schema (to_regclass of "public"."…"), so the shadows are never
// found: m's partition is refused as m's (HeldError), and a free
// partition's key is granted (found, the shadows would be refused as
// another role's).
func TestReviewGroupTablesShadowTables(t *testing.T) {
	t.Parallel()
	r := newPlantingRoles(t)
	ctx := ctxFor(t, time.Minute)
	dsn := r.victimDSN + " options='-c search_path=" + r.spy + ",public'"
	mc, ec := open(t, dsn), open(t, dsn)
	m := join(ctx, t, mc, "m")
	claim0(ctx, t, mc, m)
	for _, c := range []*postgres.Coordinator{mc, ec} {
		if g, err := c.Acquire(ctx, "jobs/9", "seen", time.Minute); err != nil || c.Release(ctx, g) != nil {
			t.Fatalf("Acquire(jobs/9) beside tenure's group tables = %v", err)
		}
	}
	hostile := r.hostile(ctx, t)
	if _, err := hostile.Exec(ctx, `GRANT USAGE ON SCHEMA `+r.spy+` TO PUBLIC;
CREATE TABLE `+r.spy+`.cluster_leadership_members (epoch bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	grp text NOT NULL, member text NOT NULL, ttl_us bigint NOT NULL, expires_at timestamptz NOT NULL, partitions integer, joined_grp text);
CREATE TABLE `+r.spy+`.cluster_leadership_partitions (grp text NOT NULL, name text NOT NULL, owner_epoch bigint,
	fencing_token bigint NOT NULL, PRIMARY KEY (grp, name));
GRANT ALL ON ALL TABLES IN SCHEMA `+r.spy+` TO PUBLIC`); err != nil {
		t.Fatal(err)
	}
	var shadowed bool // the scene: the search_path finds the shadows
	queryRow(t, dsn, `SELECT pg_catalog.to_regclass('cluster_leadership_members') OPERATOR(pg_catalog.<>) 'public.cluster_leadership_members'::pg_catalog.regclass`, nil, &shadowed)
	if !shadowed {
		t.Fatalf("search_path %s,public does not find the shadow tables first", r.spy)
	}
	for who, c := range map[string]*postgres.Coordinator{"the member's coordinator": mc, "another coordinator": ec} {
		var held *tenure.HeldError
		if g, err := c.Acquire(ctx, "jobs/0", "e", time.Minute); !errors.As(err, &held) || held.Holder != "m" {
			t.Errorf("Acquire(jobs/0) on %s beside shadow group tables first on the search_path, while m owns partition 0 = %v, %v; want a HeldError naming m", who, g, err)
		}
		if g, err := c.Acquire(ctx, "jobs/5", "e", time.Minute); err != nil || c.Release(ctx, g) != nil {
			t.Errorf("Acquire(jobs/5) on %s beside shadow group tables first on the search_path = %v; want a grant (free in tenure's tables)", who, err)
		}
	}
}

// TestReviewGroupTablesRules: rules the group tables' owner creates in
// place, which no shape check looks at. On the partitions table, an INSERT
// rule that does nothing instead makes acquirePartition's INSERT …
// RETURNING an error, and any other INSERT or UPDATE rule its ON CONFLICT
// (PostgreSQL refuses both); on the members table, an UPDATE rule that
// does nothing leaves the membership rows as they were. No Acquire grants
// m's partition while m lives.
func TestReviewGroupTablesRules(t *testing.T) {
	t.Parallel()
	for name, ddl := range map[string]string{
		"partitions":        `CREATE RULE r AS ON INSERT TO cluster_leadership_partitions DO INSTEAD NOTHING`,
		"partitions_update": `CREATE RULE r AS ON UPDATE TO cluster_leadership_partitions DO INSTEAD NOTHING`,
		"partitions_also":   `CREATE RULE r AS ON INSERT TO cluster_leadership_partitions DO ALSO SELECT 1`,
		"members":           `CREATE RULE r AS ON UPDATE TO cluster_leadership_members DO INSTEAD NOTHING`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newGroupTablesSceneAfter(t, ddl)
			for who, err := range s.acquire(t, "0") {
				if err == nil || err.Error() == "granted" {
					t.Errorf("Acquire(jobs/0) on %s beside a rule made in place (%s), while m owns partition 0 = %v; want no grant", who, name, err)
				} else {
					t.Logf("Acquire(jobs/0) on %s: %v", who, err)
				}
			}
		})
	}
}
