package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"
)

// planNode is the part of a node of EXPLAIN (FORMAT JSON) the plan test
// reads.
type planNode struct {
	NodeType      string     `json:"Node Type"`
	Relation      string     `json:"Relation Name"`
	ActualRows    float64    `json:"Actual Rows"`
	ActualLoops   float64    `json:"Actual Loops"`
	RemovedFilter float64    `json:"Rows Removed by Filter"`
	RemovedRechk  float64    `json:"Rows Removed by Index Recheck"`
	Plans         []planNode `json:"Plans"`
}

// explained is one partition statement of the Coordinator, with the plans
// PostgreSQL made for it with its arguments: custom (the arguments known
// when planning) and generic (plan_cache_mode = force_generic_plan, as a
// prepared statement may be planned after five runs), each run with
// EXPLAIN ANALYZE in a transaction rolled back, just before the
// Coordinator ran it.
type explained struct {
	sql             string
	list            int // names in the statement's list
	custom, generic string
	err             error
}

// planTracer explains, before the Coordinator runs it, every statement that
// looks partitions up from a list (the five of partitions.go that unnest
// an array of names), on a connection of its own.
type planTracer struct {
	ctx  context.Context
	conn *pgx.Conn
	mu   sync.Mutex
	got  []explained
}

func (p *planTracer) TraceQueryStart(_ context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !strings.Contains(d.SQL, "unnest(") {
		return p.ctx
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e := explained{sql: d.SQL}
	for _, a := range d.Args {
		if names, ok := a.([]string); ok {
			e.list = len(names)
		}
	}
	e.custom, e.err = p.explain(d.SQL, d.Args, false)
	if e.err == nil {
		e.generic, e.err = p.explain(d.SQL, d.Args, true)
	}
	p.got = append(p.got, e)
	return p.ctx
}

func (p *planTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// explain runs sql with args under EXPLAIN ANALYZE in a transaction it
// rolls back, and returns the plan as JSON.
func (p *planTracer) explain(sql string, args []any, generic bool) (string, error) {
	tx, err := p.conn.Begin(p.ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback(p.ctx)
	var plan string
	if !generic {
		err = tx.QueryRow(p.ctx, `EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF, FORMAT JSON) `+sql, args...).Scan(&plan)
		return plan, err
	}
	if _, err := tx.Exec(p.ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
		return "", err
	}
	if _, err := tx.Exec(p.ctx, `PREPARE generic_plan AS `+sql); err != nil {
		return "", err
	}
	defer func() { _, _ = p.conn.Exec(p.ctx, `DEALLOCATE generic_plan`) }()
	ps := make([]string, len(args))
	for i, a := range args {
		if ps[i], err = literal(a); err != nil {
			return "", err
		}
	}
	err = tx.QueryRow(p.ctx, `EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF, FORMAT JSON) EXECUTE generic_plan(`+strings.Join(ps, ", ")+`)`).Scan(&plan)
	return plan, err
}

// literal writes an argument of the partition statements as an SQL
// literal (EXECUTE takes no parameters).
func literal(a any) (string, error) {
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	switch v := a.(type) {
	case string:
		return quote(v), nil
	case int64:
		return fmt.Sprint(v), nil
	case []string:
		el := make([]string, len(v))
		for i, s := range v {
			el[i] = `"` + s + `"`
		}
		return quote("{" + strings.Join(el, ",") + "}"), nil
	case []int64:
		el := make([]string, len(v))
		for i, n := range v {
			el[i] = fmt.Sprint(n)
		}
		return quote("{" + strings.Join(el, ",") + "}"), nil
	}
	return "", fmt.Errorf("no literal for %T", a)
}

// lookupWork checks plan (EXPLAIN's JSON) against the rule of
// partitions.go: every scan of the partitions and leadership tables is an
// index lookup, and all of them together touch (return or filter out) at
// most two rows per name of the list, whatever the tables hold. The
// members table (the memberships of every group) may be read once per
// statement (PostgreSQL hashes it for the claim's "is the owner's
// membership gone" when the list is long), never once per name. It
// returns what breaks the rule.
func lookupWork(plan string, list int) []string {
	var top []struct{ Plan planNode }
	if err := json.Unmarshal([]byte(plan), &top); err != nil || len(top) != 1 {
		return []string{fmt.Sprintf("cannot read the plan: %v", err)}
	}
	const members = "cluster_leadership_members"
	tables := map[string]bool{"cluster_leadership": true, members: true, "cluster_leadership_partitions": true}
	var bad []string
	touched := map[string]float64{}
	var walk func(n planNode)
	walk = func(n planNode) {
		if tables[n.Relation] && n.NodeType != "ModifyTable" {
			index := strings.Contains(n.NodeType, "Index") || n.NodeType == "Bitmap Heap Scan"
			switch {
			case n.Relation == members && !index && n.ActualLoops > 1:
				bad = append(bad, fmt.Sprintf("%s on %s run %.0f times", n.NodeType, n.Relation, n.ActualLoops))
			case n.Relation == members && !index:
			case !index:
				bad = append(bad, fmt.Sprintf("%s on %s", n.NodeType, n.Relation))
			default:
				touched[n.Relation] += (n.ActualRows + n.RemovedFilter + n.RemovedRechk) * max(n.ActualLoops, 1)
			}
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(top[0].Plan)
	for rel, rows := range touched {
		if rows > float64(2*list+2) {
			bad = append(bad, fmt.Sprintf("%.0f rows of %s touched for %d names", rows, rel, list))
		}
	}
	return bad
}

// TestPartitionStatementsLookUpPerName: the partitions table holds
// 20,000 partitions of group "jobs" and 20,000 of another group, the
// members table 5,000 memberships of other groups, the leadership table
// 20,000 keys. A member checks, claims (some partitions free, some its
// own, some another live member's, some held as single keys) and releases
// lists of 30 to 60 partitions; each statement that looks up a list is
// explained with its arguments just before it runs, with a custom and a
// generic plan: once on tables that were never analyzed (fresh, as
// after CREATE TABLE: autovacuum is off on them) and once after ANALYZE.
// Every plan must look each name up by primary key (no sequential scan of
// the three tables; a few rows touched per name at most): a plan that
// scans the group checks 5,000 partitions of 100,000 in a second.
func TestPartitionStatementsLookUpPerName(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, 2*time.Minute)
	admin := newPool(t, dsn)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tracer := &planTracer{ctx: ctx, conn: conn}
	c := openTraced(t, dsn, tracer)
	m, other := join(ctx, t, c, "m"), join(ctx, t, c, "other")
	for _, sql := range []string{
		`ALTER TABLE ` + partitionsTable + ` SET (autovacuum_enabled = false)`,
		`ALTER TABLE ` + membersTable + ` SET (autovacuum_enabled = false)`,
		`ALTER TABLE public.cluster_leadership SET (autovacuum_enabled = false)`,
		`INSERT INTO ` + membersTable + ` (grp, member, ttl_us, expires_at)
		 SELECT 'g' || (i % 100), 'x' || i, 60000000, now() + interval '1 minute' FROM generate_series(1, 5000) i`,
		fmt.Sprintf(`INSERT INTO `+partitionsTable+` SELECT g, 'p' || lpad(i::text, 5, '0'), %d, 1000
		 FROM generate_series(0, 19999) i, (VALUES ('jobs'), ('another')) v(g)`, other.Epoch),
		fmt.Sprintf(`UPDATE `+partitionsTable+` SET owner_epoch = %d WHERE grp = 'jobs' AND (name BETWEEN 'p00100' AND 'p00139' OR name BETWEEN 'p01000' AND 'p02999')`, m.Epoch),
		`UPDATE ` + partitionsTable + ` SET owner_epoch = NULL WHERE grp = 'jobs' AND name BETWEEN 'p00200' AND 'p00209'`,
		`INSERT INTO public.cluster_leadership (resource, holder_id, fencing_token, acquired_at, expires_at)
		 SELECT 'k/' || i, 'h', 1, now(), now() + interval '1 minute' FROM generate_series(1, 20000) i`,
		`INSERT INTO public.cluster_leadership (resource, holder_id, fencing_token, acquired_at, expires_at)
		 SELECT 'jobs/p' || lpad(i::text, 5, '0'), 'x', 1, now(), now() + interval '1 minute' FROM generate_series(200, 204) i`,
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	var analyzed bool
	if err := admin.QueryRow(ctx, `SELECT reltuples >= 0 FROM pg_class WHERE oid = $1::regclass`, partitionsTable).Scan(&analyzed); err != nil || analyzed {
		t.Fatalf("the partitions table has statistics before ANALYZE (%v): the fresh case is not tested", err)
	}
	lists := make([][]tenure.Grant, 2) // m's: 40 partitions, and 2,000 (a cold start's share)
	for l, r := range [][2]int{{100, 140}, {1000, 3000}} {
		for i := r[0]; i < r[1]; i++ {
			lists[l] = append(lists[l], tenure.Grant{Key: fmt.Sprintf("jobs/p%05d", i), Holder: "m", Token: 1000})
		}
	}
	for _, phase := range []string{"fresh tables", "analyzed tables"} {
		if phase == "analyzed tables" {
			if _, err := admin.Exec(ctx, `ANALYZE `+partitionsTable+`, `+membersTable+`, public.cluster_leadership`); err != nil {
				t.Fatal(err)
			}
		}
		tracer.mu.Lock()
		tracer.got = nil
		tracer.mu.Unlock()
		for l := range lists {
			lists[l] = planRound(ctx, t, c, m, lists[l])
		}
		tracer.mu.Lock()
		got := tracer.got
		tracer.mu.Unlock()
		if len(got) != 20 {
			t.Fatalf("%s: %d statements explained, want 10 for each list: two checks, two claims each with its deletion of expired owners and its write of the keys' leadership rows, one read of owners, a release", phase, len(got))
		}
		for _, e := range got {
			first, _, _ := strings.Cut(strings.TrimSpace(e.sql), "\n")
			if e.err != nil {
				t.Errorf("%s: explain %q: %v", phase, first, e.err)
				continue
			}
			for kind, plan := range map[string]string{"custom": e.custom, "generic": e.generic} {
				if bad := lookupWork(plan, e.list); len(bad) > 0 {
					t.Errorf("%s, %s plan of %q (%d names): %s\n%s", phase, kind, first, e.list, strings.Join(bad, "; "), plan)
				}
			}
		}
	}
}

// planRound checks mine, claims them again with partitions free, owned by
// another member and held as single keys, checks the new grants, releases
// them all and claims mine back; it returns m's new grants.
func planRound(ctx context.Context, t *testing.T, c *postgres.Coordinator, m partition.Member, mine []tenure.Grant) []tenure.Grant {
	t.Helper()
	if lost, err := c.CheckPartitions(ctx, m, mine); err != nil || len(lost) > 0 {
		t.Fatalf("CheckPartitions = %v, %v; want none lost", lost, err)
	}
	names := make([]string, 0, len(mine)+20)
	for _, g := range mine {
		names = append(names, strings.TrimPrefix(g.Key, "jobs/"))
	}
	for i := 200; i < 220; i++ { // 200-204 held as single keys, 205-209 free, 210-219 other's
		names = append(names, fmt.Sprintf("p%05d", i))
	}
	got := claimAll(ctx, t, c, m, names, len(mine)+5)
	if lost, err := c.CheckPartitions(ctx, m, got); err != nil || len(lost) > 0 {
		t.Fatalf("CheckPartitions = %v, %v; want none lost", lost, err)
	}
	if err := c.ReleasePartitions(ctx, m, got); err != nil {
		t.Fatal(err)
	}
	return claimAll(ctx, t, c, m, names[:len(mine)], len(mine))
}

// claimAll claims names for m and returns the grants, want of them.
func claimAll(ctx context.Context, t *testing.T, c *postgres.Coordinator, m partition.Member, names []string, want int) []tenure.Grant {
	t.Helper()
	res, err := c.ClaimPartitions(ctx, m, names)
	if err != nil {
		t.Fatal(err)
	}
	var got []tenure.Grant
	for _, r := range res {
		if r.Err == nil {
			got = append(got, r.Grant)
		}
	}
	if len(got) != want {
		t.Fatalf("claimed %d of %d names, want %d", len(got), len(names), want)
	}
	return got
}
