package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"
)

// TestPlantedObjectsNeverRun: a role with no privilege on tenure's tables
// but CREATE on public (every role's right on PostgreSQL 13 and 14) and on
// the schema the victim's "$user" names plants a function, aggregate or
// operator named as every one tenure's SQL uses (listed from the package's
// SQL text, for the argument types tenure passes and those that convert to
// them implicitly: an exact match wins over pg_catalog's), a view named as
// every catalog table it reads and a domain named as every type it may
// name. Then tenure runs every coordinator, group and fence operation,
// with the default search_path and with pg_catalog searched last: every
// result must be right, and no planted object may have run (each records
// its calls in a table and a sequence, which no rollback undoes).
func TestPlantedObjectsNeverRun(t *testing.T) {
	t.Parallel()
	srv := server(t)
	db := srv.NewDatabase(t)
	victimDSN, victim := srv.NewRole(t, db,
		`GRANT CREATE ON SCHEMA public TO %s`, `CREATE SCHEMA %s AUTHORIZATION %s`)
	hostileDSN, hostile := srv.NewRole(t, db,
		`GRANT CREATE ON SCHEMA public TO %s`, `CREATE SCHEMA %s AUTHORIZATION %s`)
	srv.Exec(t, db, fmt.Sprintf(`GRANT CREATE ON SCHEMA %s TO %s`, pgx.Identifier{victim}.Sanitize(), pgx.Identifier{hostile}.Sanitize()))
	spy := pgx.Identifier{hostile}.Sanitize()
	ctx := ctxFor(t, 5*time.Minute)
	conn, err := pgx.Connect(ctx, hostileDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range []string{
		`SET search_path = pg_catalog`,
		`CREATE TABLE ` + spy + `.calls (what text)`,
		`CREATE SEQUENCE ` + spy + `.calls_seq`,
		`CREATE FUNCTION ` + spy + `.spy(what text) RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog
AS $$ BEGIN INSERT INTO ` + spy + `.calls VALUES (what); PERFORM nextval('` + spy + `.calls_seq'); RETURN true; END $$`,
		`CREATE FUNCTION ` + spy + `.run_all(stmts text[]) RETURNS integer LANGUAGE plpgsql
AS $$ DECLARE s text; n integer := 0; BEGIN
  FOREACH s IN ARRAY stmts LOOP BEGIN EXECUTE s; EXCEPTION WHEN others THEN n := n + 1; END; END LOOP;
  RETURN n; END $$`,
		`GRANT USAGE ON SCHEMA ` + spy + ` TO PUBLIC`,
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	names := packageSQL(t)
	if !slices.Contains(names.funcs, "unnest") || !slices.Contains(names.ops, "=") {
		t.Fatalf("listed functions %v, operators %v from the package's SQL; want unnest and = among them", names.funcs, names.ops)
	}
	p := &planter{conn: conn, spy: spy, names: names,
		schemas: []string{"public", pgx.Identifier{victim}.Sanitize()}}
	p.plant(t, plantTypes)

	// The victim makes its tables, then the planter adds copies that take
	// their row types. (Each run below makes tables of its own too.)
	setup := open(t, victimDSN)
	m, err := setup.JoinGroup(ctx, "setup", "m", time.Minute, 0)
	if err != nil {
		t.Fatalf("JoinGroup() = %v", err)
	}
	if err := setup.LeaveGroup(ctx, m); err != nil {
		t.Fatalf("LeaveGroup() = %v", err)
	}
	var rowTypes []string
	if err := conn.QueryRow(ctx, `SELECT ARRAY(SELECT reltype::regtype::text FROM pg_catalog.pg_class
WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' AND relname LIKE 'cluster_leadership%')`).Scan(&rowTypes); err != nil {
		t.Fatal(err)
	}
	p.plant(t, rowTypes)
	p.plantRelationsAndTypes(t)
	t.Logf("planted %d objects (%d signatures refused) for functions %v, operators %v, relations %v",
		p.n, p.failed, names.funcs, names.ops, names.rels)

	for _, path := range []struct{ name, dsn string }{
		{"default search_path", victimDSN},
		{"pg_catalog last", pgtest.WithParams(victimDSN, map[string]string{"options": `-c search_path="$user",public,pg_catalog`})},
	} {
		t.Run(path.name, func(t *testing.T) { runEveryOperation(t, path.dsn) })
	}
	var calls []string
	if err := conn.QueryRow(ctx, `SELECT ARRAY(SELECT DISTINCT what FROM `+spy+`.calls ORDER BY 1)`).Scan(&calls); err != nil {
		t.Fatal(err)
	}
	var bumped bool
	if err := conn.QueryRow(ctx, `SELECT is_called FROM `+spy+`.calls_seq`).Scan(&bumped); err != nil {
		t.Fatal(err)
	}
	if len(calls) > 0 || bumped {
		t.Errorf("tenure's SQL ran planted objects (sequence bumped: %v): %s", bumped, strings.Join(calls, "; "))
	}
}

// runEveryOperation runs every operation of the coordinator, the group
// and the fence on dsn and checks each result.
func runEveryOperation(t *testing.T, dsn string) {
	ctx := ctxFor(t, 2*time.Minute)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s = %v", what, err)
		}
	}
	key := strings.NewReplacer(" ", "-", "_", "-").Replace(strings.ToLower(t.Name()[strings.LastIndex(t.Name(), "/")+1:]))
	c, w := open(t, dsn), open(t, dsn, postgres.WithNotify(postgres.NotifyAll))
	events, err := w.Watch(ctx, key)
	must("Watch()", err)
	next := func() tenure.LeaderEvent {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("Watch() sent no event within 10s")
			return tenure.LeaderEvent{}
		}
	}
	next()
	g, err := c.Acquire(ctx, key, "a", time.Minute)
	must("Acquire()", err)
	if ev := next(); !ev.Held || ev.Grant.Token != g.Token {
		t.Fatalf("Watch() event after Acquire = %+v; want held with token %d", ev, g.Token)
	}
	if _, err := w.Acquire(ctx, key, "b", time.Minute); !errors.Is(err, tenure.ErrHeld) {
		t.Fatalf("second Acquire() = %v; want ErrHeld", err)
	}
	g, err = c.Renew(ctx, g)
	must("Renew()", err)
	if l, ok, err := w.Leader(ctx, key); err != nil || !ok || l.Token != g.Token {
		t.Fatalf("Leader() = %v, %v, %v; want token %d", l, ok, err, g.Token)
	}
	if gs, err := w.List(ctx, key); err != nil || len(gs) != 1 || gs[0].Holder != "a" {
		t.Fatalf("List() = %v, %v; want a's grant", gs, err)
	}
	must("Release()", c.Release(ctx, g))
	if ev := next(); ev.Held {
		t.Fatalf("Watch() event after Release = %+v; want free", ev)
	}
	g2, err := w.Acquire(ctx, key, "b", time.Minute)
	must("Acquire() after Release", err)
	if g2.Token <= g.Token {
		t.Fatalf("token after release %d; want more than %d", g2.Token, g.Token)
	}
	must("Release()", w.Release(ctx, g2))
	runForeign(t, c, key)

	// A key that could be a partition's, on a table with no group tables.
	lone := open(t, dsn, postgres.WithTable("lone_"+strings.ReplaceAll(key, "-", "_")))
	lg, err := lone.Acquire(ctx, key+"/0", "a", time.Minute)
	must("Acquire() of a partition-like key without group tables", err)
	must("Release()", lone.Release(ctx, lg))
	lm, err := lone.JoinGroup(ctx, key, "a", time.Minute, 0) // makes its group tables
	must("JoinGroup()", err)
	must("LeaveGroup()", lone.LeaveGroup(ctx, lm))

	runGroupOperations(t, c, w, key)
	runFence(t, dsn, key)
}

// runForeign plants a row no grant wrote (no holder, a lease to infinity)
// and lists and removes it as tenure status and release --force do.
func runForeign(t *testing.T, c *postgres.Coordinator, key string) {
	ctx := ctxFor(t, time.Minute)
	fk := key + "-foreign"
	if _, err := c.Pool().Exec(ctx, `INSERT INTO `+c.Table()+` (resource, holder_id, fencing_token, expires_at)
VALUES ($1, NULL, 7, 'infinity')`, fk); err != nil {
		t.Fatal(err)
	}
	rs, err := c.ListForeign(ctx, fk)
	if err != nil || len(rs) != 1 || rs[0].Key != fk {
		t.Fatalf("ListForeign(%s) = %+v, %v; want the planted row", fk, rs, err)
	}
	if ok, err := c.RemoveForeign(ctx, rs[0]); !ok || err != nil {
		t.Fatalf("RemoveForeign(%+v) = %v, %v; want true", rs[0], ok, err)
	}
}

// runGroupOperations runs every operation of a partition group.
func runGroupOperations(t *testing.T, c, w *postgres.Coordinator, group string) {
	ctx := ctxFor(t, 2*time.Minute)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s = %v", what, err)
		}
	}
	changes, err := w.WatchMembers(ctx, group)
	must("WatchMembers()", err)
	<-changes
	short, err := c.JoinGroup(ctx, group, "short", time.Second, 4)
	must("JoinGroup()", err)
	a, err := c.JoinGroup(ctx, group, "a", time.Minute, 4)
	must("JoinGroup()", err)
	b, err := w.JoinGroup(ctx, group, "b", time.Minute, 4)
	must("JoinGroup()", err)
	if a.Epoch <= short.Epoch || b.Epoch <= a.Epoch {
		t.Fatalf("epochs %d, %d, %d; want increasing", short.Epoch, a.Epoch, b.Epoch)
	}
	select {
	case <-changes:
	case <-ctx.Done():
		t.Fatal("WatchMembers() saw no join")
	}
	single, err := w.Acquire(ctx, partition.Key(group, "3"), "x", time.Minute)
	must("Acquire() of a free partition's key", err)
	got, err := c.ClaimPartitions(ctx, a, []string{"0", "1", "3"})
	must("ClaimPartitions()", err)
	if got[0].Err != nil || got[1].Err != nil || !errors.Is(got[2].Err, tenure.ErrHeld) {
		t.Fatalf("ClaimPartitions(0, 1, 3) = %+v; want 0 and 1 granted, 3 held by a single key", got)
	}
	grants := []tenure.Grant{got[0].Grant, got[1].Grant}
	other, err := w.ClaimPartitions(ctx, b, []string{"1", "2"})
	must("ClaimPartitions()", err)
	var held *tenure.HeldError
	if !errors.As(other[0].Err, &held) || held.Holder != "a" || other[1].Err != nil {
		t.Fatalf("b's ClaimPartitions(1, 2) = %+v; want 1 held by a, 2 granted", other)
	}
	if _, err := w.Acquire(ctx, partition.Key(group, "0"), "x", time.Minute); !errors.Is(err, tenure.ErrHeld) {
		t.Fatalf("Acquire() of a's partition's key = %v; want ErrHeld", err)
	}
	must("Release()", w.Release(ctx, single))
	if lost, err := c.CheckPartitions(ctx, a, grants); err != nil || len(lost) != 0 {
		t.Fatalf("CheckPartitions() = %v, %v; want none lost", lost, err)
	}
	a, err = c.RenewMember(ctx, a)
	must("RenewMember()", err)
	if ms, err := w.GroupMembers(ctx, group); err != nil || len(ms) < 2 || ms[0].Partitions != 4 {
		t.Fatalf("GroupMembers() = %v, %v; want a and b with 4 partitions", ms, err)
	}
	if ps, err := w.GroupPartitions(ctx, group); err != nil || len(ps) != 3 {
		t.Fatalf("GroupPartitions() = %v, %v; want 0, 1 and 2", ps, err)
	}
	must("ReleasePartitions()", c.ReleasePartitions(ctx, a, grants[:1]))
	time.Sleep(time.Second + 100*time.Millisecond) // short's membership expires; the next claim deletes it
	again, err := w.ClaimPartitions(ctx, b, []string{"0"})
	if err != nil || again[0].Err != nil || again[0].Grant.Token <= grants[0].Token {
		t.Fatalf("b's ClaimPartitions(0) after a released it = %+v, %v; want a newer token than %d", again, err, grants[0].Token)
	}
	must("LeaveGroup()", w.LeaveGroup(ctx, b))
	must("LeaveGroup()", c.LeaveGroup(ctx, a))
	if _, err := c.RenewMember(ctx, a); !errors.Is(err, tenure.ErrLost) {
		t.Fatalf("RenewMember() after LeaveGroup = %v; want ErrLost", err)
	}
	// Partition 1's row still names a, whose membership is gone.
	g1, err := w.Acquire(ctx, partition.Key(group, "1"), "x", time.Minute)
	must("Acquire() of a gone member's partition's key", err)
	must("Release()", w.Release(ctx, g1))
}

// runFence runs the fence on a table of the victim's whose id is a
// character varying (pg_catalog has no = of its own for it).
func runFence(t *testing.T, dsn, key string) {
	ctx := ctxFor(t, time.Minute)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	table := "public.fenced_" + strings.ReplaceAll(key, "-", "_")
	if _, err := conn.Exec(ctx, `CREATE TABLE `+table+` (id pg_catalog.varchar PRIMARY KEY, v pg_catalog.int4)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO `+table+` VALUES ('r', 0)`); err != nil {
		t.Fatal(err)
	}
	if err := postgres.AddFencingColumn(ctx, conn, table); err != nil {
		t.Fatalf("AddFencingColumn() = %v", err)
	}
	if err := postgres.FenceUpdate(ctx, conn, table, "id", "r", 5, map[string]any{"v": 1}); err != nil {
		t.Fatalf("FenceUpdate(token 5) = %v", err)
	}
	var stale *fence.StaleError
	if err := postgres.FenceUpdate(ctx, conn, table, "id", "r", 4, map[string]any{"v": 2}); !errors.As(err, &stale) || stale.Required != 5 {
		t.Fatalf("FenceUpdate(token 4) after 5 = %v; want a StaleError requiring 5", err)
	}
	if err := postgres.FenceUpdate(ctx, conn, table, "id", "none", 6, map[string]any{"v": 3}); !errors.Is(err, postgres.ErrRowNotFound) {
		t.Fatalf("FenceUpdate() of a missing row = %v; want ErrRowNotFound", err)
	}
	var v int
	if err := conn.QueryRow(ctx, `SELECT v FROM `+table).Scan(&v); err != nil || v != 1 {
		t.Fatalf("fenced row's v = %d, %v; want 1", v, err)
	}
}
