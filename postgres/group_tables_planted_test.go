package postgres_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"
)

// TestPlantedGroupTablesNeverUsed: a role with CREATE on public (every
// role's right on PostgreSQL 13 and 14) but no privilege on tenure's
// leadership table creates, before any member joined, tables named as the
// group tables tenure would make for it, of the right shape, open to
// PUBLIC, with a trigger and a column default that record who ran them.
// Neither a single-key Acquire of a key that could name a partition (it is
// refused) nor a JoinGroup and a claim may run them: tenure must not use
// group tables that another role owns (their owner's triggers, defaults, rules and policies
// would run as tenure's role, and their owner could rewrite owners and
// tokens at will).
func TestPlantedGroupTablesNeverUsed(t *testing.T) {
	t.Parallel()
	r := newPlantingRoles(t)
	spy, ctx := r.spy, ctxFor(t, 3*time.Minute)
	c := open(t, r.victimDSN) // makes public.cluster_leadership, owned by the victim
	conn := r.hostile(ctx, t)
	plantGroupTables(t, conn, spy)

	// A key that cannot name a partition is not hindered. One that can is
	// refused, naming the tables: tenure cannot tell planted tables from
	// the group tables of another role's members, which may own the
	// partition (TestAcquireBesideGroupTablesOfAnotherRole).
	g, err := c.Acquire(ctx, "jobs", "a", time.Minute)
	if err != nil {
		t.Fatalf("Acquire(jobs) = %v", err)
	}
	if err := c.Release(ctx, g); err != nil {
		t.Fatalf("Release(jobs) = %v", err)
	}
	for i := range 3 {
		g, err := c.Acquire(ctx, partition.Key("jobs", fmt.Sprint(i)), "a", time.Minute)
		if !errors.Is(err, postgres.ErrTableShape) {
			t.Errorf("Acquire(jobs/%d) = %v, %v; want ErrTableShape", i, g, err)
		}
	}
	// A user of groups is refused, naming the tables.
	if m, err := c.JoinGroup(ctx, "jobs", "m", time.Minute, 0); !errors.Is(err, postgres.ErrTableShape) {
		t.Errorf("JoinGroup() = %v, %v; want ErrTableShape", m, err)
		if err == nil {
			_, err := c.ClaimPartitions(ctx, m, []string{"0", "1"})
			t.Logf("ClaimPartitions() = %v", err)
			_ = c.LeaveGroup(ctx, m)
		}
	}

	if calls := spyCalls(t, conn, spy); len(calls) > 0 {
		t.Errorf("tenure used group tables another role made, and ran its code %d times: %q", len(calls), calls)
	}
}

// plantGroupTables makes, as the role of conn, whose schema spy is, tables
// named as tenure's group tables in public, of the right shape, open to
// PUBLIC, holding a member of group jobs that owns partition 9, with
// triggers, a column default and row security policies that record in
// spy.calls who ran them.
func plantGroupTables(t *testing.T, conn *pgx.Conn, spy string) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	for _, s := range []string{
		`CREATE TABLE ` + spy + `.calls (what text, who text)`,
		`GRANT USAGE ON SCHEMA ` + spy + ` TO PUBLIC`,
		`GRANT INSERT ON ` + spy + `.calls TO PUBLIC`,
		`CREATE FUNCTION ` + spy + `.rec() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO ` + spy + `.calls VALUES (TG_TABLE_NAME || ' ' || TG_OP, current_user); RETURN NEW; END $$`,
		`CREATE FUNCTION ` + spy + `.def() RETURNS integer LANGUAGE plpgsql AS $$
BEGIN INSERT INTO ` + spy + `.calls VALUES ('default', current_user); RETURN NULL; END $$`,
		`CREATE FUNCTION ` + spy + `.seen() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN INSERT INTO ` + spy + `.calls VALUES ('policy', current_user); RETURN true; END $$`,
		`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ` + spy + ` TO PUBLIC`,
		`CREATE TABLE public.cluster_leadership_members (
	epoch      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	grp        text NOT NULL,
	member     text NOT NULL,
	ttl_us     bigint NOT NULL,
	expires_at timestamptz NOT NULL,
	partitions integer DEFAULT ` + spy + `.def()
)`,
		`CREATE TABLE public.cluster_leadership_partitions (
	grp           text NOT NULL,
	name          text NOT NULL,
	owner_epoch   bigint,
	fencing_token bigint NOT NULL,
	PRIMARY KEY (grp, name)
)`,
		// A member of group jobs owning partition 9, so that reads meet rows.
		`INSERT INTO public.cluster_leadership_members (grp, member, ttl_us, expires_at, partitions) VALUES ('jobs', 'planted', 60000000, now() + interval '1 hour', 0)`,
		`INSERT INTO public.cluster_leadership_partitions VALUES ('jobs', '9', 1, 1)`,
		// Row security policies run for the rows another role reads.
		`ALTER TABLE public.cluster_leadership_members ENABLE ROW LEVEL SECURITY`,
		`ALTER TABLE public.cluster_leadership_partitions ENABLE ROW LEVEL SECURITY`,
		`CREATE POLICY planted ON public.cluster_leadership_members USING (` + spy + `.seen()) WITH CHECK (true)`,
		`CREATE POLICY planted ON public.cluster_leadership_partitions USING (` + spy + `.seen()) WITH CHECK (true)`,
		`CREATE TRIGGER planted BEFORE INSERT OR UPDATE ON public.cluster_leadership_partitions FOR EACH ROW EXECUTE FUNCTION ` + spy + `.rec()`,
		`CREATE TRIGGER planted BEFORE INSERT OR UPDATE OR DELETE ON public.cluster_leadership_members FOR EACH ROW EXECUTE FUNCTION ` + spy + `.rec()`,
		// Statement triggers run even when a statement writes no row.
		`CREATE TRIGGER planted_statement BEFORE INSERT OR UPDATE OR DELETE ON public.cluster_leadership_partitions FOR EACH STATEMENT EXECUTE FUNCTION ` + spy + `.rec()`,
		`CREATE TRIGGER planted_statement BEFORE INSERT OR UPDATE OR DELETE ON public.cluster_leadership_members FOR EACH STATEMENT EXECUTE FUNCTION ` + spy + `.rec()`,
		`GRANT ALL ON public.cluster_leadership_members, public.cluster_leadership_partitions TO PUBLIC`,
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}

}

// spyCalls returns what plantGroupTables's code recorded: what ran, and as
// whom.
func spyCalls(t *testing.T, conn *pgx.Conn, spy string) []string {
	t.Helper()
	var calls []string
	if err := conn.QueryRow(ctxFor(t, time.Minute), `SELECT ARRAY(SELECT what || ' as ' || who FROM `+spy+`.calls)`).Scan(&calls); err != nil {
		t.Fatal(err)
	}
	return calls
}

// TestPlantedGroupTablesDuringJoin: the hostile role holds the advisory
// lock JoinGroup takes to create the group tables (advisory locks are
// open to every role), waits until JoinGroup waits for it, creates the
// tables with a trigger, and lets go: CREATE TABLE IF NOT EXISTS then
// skips them, and JoinGroup must still fail instead of joining in them.
func TestPlantedGroupTablesDuringJoin(t *testing.T) {
	t.Parallel()
	r := newPlantingRoles(t)
	spy, ctx := r.spy, ctxFor(t, 3*time.Minute)
	c := open(t, r.victimDSN)
	conn := r.hostile(ctx, t)
	exec := func(s string) {
		t.Helper()
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	exec(`CREATE TABLE ` + spy + `.calls (what text, who text)`)
	exec(`GRANT USAGE ON SCHEMA ` + spy + ` TO PUBLIC`)
	exec(`GRANT INSERT ON ` + spy + `.calls TO PUBLIC`)
	exec(`CREATE FUNCTION ` + spy + `.rec() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO ` + spy + `.calls VALUES (TG_TABLE_NAME || ' ' || TG_OP, current_user); RETURN NEW; END $$`)
	exec(`SELECT pg_advisory_lock(x'74656e75'::int, hashtext('"public"."cluster_leadership_partitions"'))`)

	joined := make(chan error, 1)
	go func() {
		m, err := c.JoinGroup(ctx, "jobs", "m", time.Minute, 0)
		if err == nil {
			_, err = c.ClaimPartitions(ctx, m, []string{"0"})
			_ = c.LeaveGroup(ctx, m)
		}
		joined <- err
	}()
	for {
		var waiting bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND classid = x'74656e75'::int::oid)`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	exec(`CREATE TABLE public.cluster_leadership_members (epoch bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	grp text NOT NULL, member text NOT NULL, ttl_us bigint NOT NULL, expires_at timestamptz NOT NULL, partitions integer)`)
	exec(`CREATE TABLE public.cluster_leadership_partitions (grp text NOT NULL, name text NOT NULL,
	owner_epoch bigint, fencing_token bigint NOT NULL, PRIMARY KEY (grp, name))`)
	exec(`CREATE TRIGGER planted BEFORE INSERT OR UPDATE ON public.cluster_leadership_partitions FOR EACH ROW EXECUTE FUNCTION ` + spy + `.rec()`)
	exec(`CREATE TRIGGER planted BEFORE INSERT OR UPDATE OR DELETE ON public.cluster_leadership_members FOR EACH ROW EXECUTE FUNCTION ` + spy + `.rec()`)
	exec(`GRANT ALL ON public.cluster_leadership_members, public.cluster_leadership_partitions TO PUBLIC`)
	exec(`SELECT pg_advisory_unlock_all()`)

	// (ALTER TABLE … ADD COLUMN IF NOT EXISTS, after the CREATE, needs
	// ownership: the server refuses it.)
	if err := <-joined; err == nil {
		t.Errorf("JoinGroup() and a claim in the planted tables = nil; want an error")
	}
	if calls := spyCalls(t, conn, spy); len(calls) > 0 {
		t.Errorf("tenure used group tables another role made while it created them, and ran its code %d times: %q", len(calls), calls)
	}
}
