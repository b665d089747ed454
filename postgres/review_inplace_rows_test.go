//go:build openfinding

// Open finding of review-pgguard (issue 34): ALTER TABLEs of the
// leadership table, made in place while coordinators run, that end in the
// very shape tenure makes, but with every lease's end moved: no result
// column of a guarded statement changed, so PostgreSQL plans the prepared
// statements again without a word, and the guard (see the package's guard)
// checks nothing. A second holder is granted a live key.
//
// Run: go test -tags openfinding -count=1 -run TestReviewInPlaceRowsMoved ./postgres/
//
// What it shows: both cases grant 'other' the key h holds, with about a
// minute of h's lease left. Each is a change of the rows, as an UPDATE of
// expires_at by the table's owner would be, and no check of the table's
// shape can see it; the docs' "An ALTER TABLE made in place while tenure
// runs is refused at the next statement" claimed more than that, and now
// name such changes (docs/postgresql.md, "Tables made beforehand").

package postgres_test

import (
	"testing"
	"time"
)

// TestReviewInPlaceRowsMoved: "there and back": expires_at made timestamp
// from New York time and timestamptz again from UTC, in one transaction
// (each ALTER is one the docs say is refused when made alone); "renamed":
// expires_at renamed away and a new expires_at added, of tenure's type,
// NOT NULL, with the default '-infinity' every key's row is inserted with.
func TestReviewInPlaceRowsMoved(t *testing.T) {
	t.Parallel()
	for name, ddl := range map[string]string{
		"there and back": `BEGIN;
ALTER TABLE cluster_leadership ALTER COLUMN expires_at TYPE timestamp;
SET LOCAL TimeZone = 'UTC';
ALTER TABLE cluster_leadership ALTER COLUMN expires_at TYPE timestamptz;
COMMIT`,
		"renamed": `ALTER TABLE cluster_leadership RENAME COLUMN expires_at TO expired_at;
ALTER TABLE cluster_leadership ADD COLUMN expires_at timestamptz NOT NULL DEFAULT '-infinity'`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newInPlaceScene(t)
			s.exec(t, ddl)
			if g, err := s.c2.Acquire(ctxFor(t, time.Minute), "k", "other", time.Minute); !isHeld(err) {
				t.Errorf("Acquire(k, other) after %s, while h holds k with %s left = %v, %v; want a HeldError",
					name, s.g.Sent.Add(s.g.TTL).Until().Round(time.Millisecond), g, err)
			}
		})
	}
}
