package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestForeignRowWithNullExpiry: a leadership table made beforehand whose
// expires_at may be NULL (Dial accepts its shape: the column's type is
// right), and a row written there by hand, or by another program, with
// holder "mallory", token 5 and no expires_at. Either Dial refuses the
// table (ErrTableShape, as for other shapes that break the coordinator),
// or the row is a record tenure did not write and its contract holds:
// ListForeign names it, RemoveForeign frees it, and the next Acquire is
// granted with a token above 5. The Acquire before RemoveForeign must not
// fail for a reason other than the key being held (a user who reads
// status must learn why `tenure run` waits).
func TestForeignRowWithNullExpiry(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 30*time.Second)
	a, _, ok := dialTableMadeBeforehand(ctx, t, newDB(t), "nullable_expiry",
		`CREATE TABLE public.nullable_expiry (
	resource      text PRIMARY KEY,
	holder_id     text,
	fencing_token bigint NOT NULL DEFAULT 0,
	acquired_at   timestamptz,
	expires_at    timestamptz
)`,
		`INSERT INTO public.nullable_expiry (resource, holder_id, fencing_token, expires_at) VALUES ('n/null', 'mallory', 5, NULL)`)
	if !ok {
		return // refused as a shape tenure cannot use: fine
	}
	g, err := a.Acquire(ctx, "n/null", "h1", time.Second)
	t.Logf("Acquire(n/null, h1) beside a row with a NULL expires_at = %v, %v", g, err)
	if err == nil && g.Token <= 5 {
		t.Fatalf("Acquire(n/null) granted token %d; want a token above the row's 5", g.Token)
	}
	if err == nil {
		return // granted over the row with a greater token: fine
	}
	if !errors.Is(err, tenure.ErrHeld) {
		t.Errorf("Acquire(n/null) = %v; want a grant or ErrHeld naming the record, not an error that says nothing of it", err)
	}
	rs, lerr := a.ListForeign(ctx, "n/")
	if lerr != nil || len(rs) != 1 || rs[0].Key != "n/null" {
		t.Fatalf("ListForeign(n/) = %+v, %v; want the row of n/null, which no Acquire can take (Acquire: %v)", rs, lerr, err)
	}
	if ok, err := a.RemoveForeign(ctx, rs[0]); !ok || err != nil {
		t.Fatalf("RemoveForeign(%+v) = %v, %v; want true, nil", rs[0], ok, err)
	}
	if g, err := a.Acquire(ctx, "n/null", "h1", time.Second); err != nil || g.Token <= 5 {
		t.Fatalf("Acquire(n/null) after RemoveForeign = %v, %v; want a grant above token 5", g, err)
	}
}

// TestForeignRowWithNullToken: the same for a leadership table made
// beforehand whose fencing_token may be NULL, and a live row written there
// with holder "mallory", no token, ending in an hour: ListForeign of its
// prefix must still answer (a status of every key under it reads through
// it), and Acquire by another holder must be refused as held.
func TestForeignRowWithNullToken(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 30*time.Second)
	a, _, ok := dialTableMadeBeforehand(ctx, t, newDB(t), "nullable_token",
		`CREATE TABLE public.nullable_token (
	resource      text PRIMARY KEY,
	holder_id     text,
	fencing_token bigint,
	acquired_at   timestamptz,
	expires_at    timestamptz NOT NULL DEFAULT '-infinity'
)`,
		`INSERT INTO public.nullable_token (resource, holder_id, fencing_token, expires_at) VALUES ('n/tok', 'mallory', NULL, now() + interval '1 hour')`)
	if !ok {
		return // refused as a shape tenure cannot use: fine
	}
	if _, err := a.Acquire(ctx, "n/other", "h1", time.Second); err != nil {
		t.Fatalf("Acquire(n/other) = %v; want a grant of a key beside the row", err)
	}
	rs, err := a.ListForeign(ctx, "n/")
	if err != nil {
		t.Errorf("ListForeign(n/) = %v; want an answer: one row without a token hides every record under n/", err)
	}
	t.Logf("ListForeign(n/) = %+v, %v", rs, err)
	if g, err := a.Acquire(ctx, "n/tok", "h1", time.Second); !errors.Is(err, tenure.ErrHeld) {
		t.Errorf("Acquire(n/tok) beside a live row without a token = %v, %v; want ErrHeld", g, err)
	}
}
