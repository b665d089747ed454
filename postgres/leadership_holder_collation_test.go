package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestLeadershipTableHolderCollation: a leadership table made beforehand
// whose holder_id column has a nondeterministic collation (ICU, case
// insensitive). A grant compares holder_id with the acquiring holder to
// let a holder acquire its own key again; under that collation holders
// "Node-1" and "node-1" are one, and the second would be granted the key
// over the first's live grant: two holders. Dial must refuse the table
// (ErrTableShape), or the second Acquire must be refused (ErrHeld).
func TestLeadershipTableHolderCollation(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	a, b, ok := dialTableMadeBeforehand(ctx, t, dsn, "ci_holder",
		`CREATE COLLATION case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`,
		`CREATE TABLE ci_holder (resource text PRIMARY KEY, holder_id text COLLATE case_insensitive,
	fencing_token bigint NOT NULL DEFAULT 0, acquired_at timestamptz, expires_at timestamptz NOT NULL DEFAULT '-infinity')`)
	if !ok {
		return
	}
	ga, err := a.Acquire(ctx, "jobs", "Node-1", time.Minute)
	if err != nil {
		t.Fatalf("Acquire(jobs, Node-1) = %v", err)
	}
	if gb, err := b.Acquire(ctx, "jobs", "node-1", time.Minute); !errors.Is(err, tenure.ErrHeld) {
		_, rerr := a.Renew(ctx, ga)
		t.Fatalf("Acquire(jobs, node-1) while Node-1 holds %v = %v, %v; want ErrHeld (Node-1's Renew: %v)", ga, gb, err, rerr)
	}
}
