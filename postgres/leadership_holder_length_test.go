package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/postgres"
)

// TestLeadershipTableHolderLength: the seed's leadership table, whose
// holder_id is varchar(255), and holders of up to 256 bytes
// (limits.MaxHolderLen). PostgreSQL stores a string too long for a
// varchar(n) column without an error when the excess is spaces, cutting
// them: holder "x…x " (255 x and a space) is stored as "x…x", which is
// another holder, who would then be granted the first's live key (a
// holder may acquire its own key again). Holder "x…x " must be refused
// (an error naming it and the column), or the other's Acquire must be
// refused (ErrHeld).
func TestLeadershipTableHolderLength(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	pool := newPool(t, dsn)
	ctx := ctxFor(t, time.Minute)
	if _, err := pool.Exec(ctx, `CREATE TABLE seed_leadership (
	resource varchar(255) PRIMARY KEY, holder_id varchar(255), fencing_token bigint NOT NULL DEFAULT 0,
	acquired_at timestamptz, expires_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	c := open(t, dsn, postgres.WithTable("seed_leadership"))
	long, cut := strings.Repeat("x", 255)+" ", strings.Repeat("x", 255)
	ga, err := c.Acquire(ctx, "jobs", long, time.Minute)
	if err != nil {
		if !errors.Is(err, tenure.ErrInvalidHolder) || !strings.Contains(err.Error(), "holder_id") {
			t.Fatalf("Acquire(jobs) by a 256-byte holder = %v; want it granted, or ErrInvalidHolder naming column holder_id", err)
		}
		t.Logf("Acquire(jobs) by a 256-byte holder = %v", err)
		return
	}
	if gb, err := c.Acquire(ctx, "jobs", cut, time.Minute); !errors.Is(err, tenure.ErrHeld) {
		_, rerr := c.Renew(ctx, ga)
		t.Fatalf("Acquire(jobs) by the 255 x while %q (256 bytes) holds token %d = %v, %v; want ErrHeld (the first's Renew: %v)", long[250:], ga.Token, gb, err, rerr)
	}
}
