package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure/postgres"
)

// TestPlantedLeadershipTableNeverUsed: a role with CREATE on public (every
// role's right on PostgreSQL 13 and 14) but no other privilege makes,
// before tenure's first run, a table named as tenure's leadership table, of
// the right shape, open to PUBLIC, with row and statement triggers, a row
// security policy and a column default that record who ran them. A role
// that would have made the table itself, and one that only reads, must not
// use it: its owner's code would run as their role (whatever that role may
// do to the application's own tables). Dial refuses it with ErrTableShape.
func TestPlantedLeadershipTableNeverUsed(t *testing.T) {
	t.Parallel()
	r := newPlantingRoles(t)
	readerDSN, _ := server(t).NewRole(t, r.db)
	spy, ctx := r.spy, ctxFor(t, 3*time.Minute)
	conn := r.hostile(ctx, t)
	plantLeadershipTable(t, conn, spy)

	for _, who := range []struct{ name, dsn string }{{"campaigner", r.victimDSN}, {"reader", readerDSN}} {
		c, err := postgres.Dial(ctx, who.dsn)
		if err == nil {
			// Run what a campaigner and a reader run, to show what it costs.
			if g, err := c.Acquire(ctx, "jobs", "a", time.Minute); err == nil {
				_, _ = c.Renew(ctx, g)
				_ = c.Release(ctx, g)
			}
			_, _, _ = c.Leader(ctx, "jobs")
			_, _ = c.List(ctx, "")
			c.Close()
			t.Errorf("Dial() as the %s on a leadership table another role made = a Coordinator; want ErrTableShape", who.name)
		} else if !errors.Is(err, postgres.ErrTableShape) {
			t.Errorf("Dial() as the %s on a leadership table another role made = %v; want ErrTableShape", who.name, err)
		} else {
			t.Logf("Dial() as the %s: %v", who.name, err)
		}
	}
	if calls := spyCalls(t, conn, spy); len(calls) > 0 {
		t.Errorf("tenure used a leadership table another role made, and ran its code %d times: %q", len(calls), calls)
	}
}

// plantLeadershipTable makes, as the role of conn, whose schema spy is, a
// table named as tenure's leadership table in public, of the right shape,
// open to PUBLIC, holding a live row, with triggers, a column default and a
// row security policy that record in spy.calls who ran them.
func plantLeadershipTable(t *testing.T, conn *pgx.Conn, spy string) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	for _, s := range []string{
		`CREATE TABLE ` + spy + `.calls (what text, who text)`,
		`GRANT USAGE ON SCHEMA ` + spy + ` TO PUBLIC`,
		`GRANT INSERT ON ` + spy + `.calls TO PUBLIC`,
		`CREATE FUNCTION ` + spy + `.rec() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO ` + spy + `.calls VALUES (TG_TABLE_NAME || ' ' || TG_OP || ' ' || TG_LEVEL, current_user); RETURN NEW; END $$`,
		`CREATE FUNCTION ` + spy + `.def() RETURNS integer LANGUAGE plpgsql AS $$
BEGIN INSERT INTO ` + spy + `.calls VALUES ('default', current_user); RETURN NULL; END $$`,
		`CREATE FUNCTION ` + spy + `.seen() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN INSERT INTO ` + spy + `.calls VALUES ('policy', current_user); RETURN true; END $$`,
		`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ` + spy + ` TO PUBLIC`,
		`CREATE TABLE public.cluster_leadership (
	resource      text PRIMARY KEY,
	holder_id     text,
	fencing_token bigint NOT NULL DEFAULT 0,
	acquired_at   timestamptz,
	expires_at    timestamptz NOT NULL DEFAULT '-infinity',
	note          integer DEFAULT ` + spy + `.def()
)`,
		`INSERT INTO public.cluster_leadership (resource, holder_id, fencing_token, acquired_at, expires_at, note)
VALUES ('other', 'planted', 1, now(), now() + interval '1 hour', 0)`,
		`ALTER TABLE public.cluster_leadership ENABLE ROW LEVEL SECURITY`,
		`CREATE POLICY planted ON public.cluster_leadership USING (` + spy + `.seen()) WITH CHECK (true)`,
		`CREATE TRIGGER planted BEFORE INSERT OR UPDATE ON public.cluster_leadership FOR EACH ROW EXECUTE FUNCTION ` + spy + `.rec()`,
		`CREATE TRIGGER planted_statement BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.cluster_leadership FOR EACH STATEMENT EXECUTE FUNCTION ` + spy + `.rec()`,
		`GRANT ALL ON public.cluster_leadership TO PUBLIC`,
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}
