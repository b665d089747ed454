// A holder name left in a partition's key's leadership row by an admin
// edit while a member owns the partition (a row restored from a backup
// taken before the claim, or a holder written by hand to keep the key for
// maintenance, left to lapse) never lets a new Coordinator grant the key
// over the member's live partition: every Acquire of a key that can name a
// partition checks the partition. (A one-statement re-acquisition that
// trusted the row's holder failed this test: "after UPDATE
// public.cluster_leadership SET holder_id = 'restored' ..., a new
// Coordinator's Acquire(g/0) = g/0@... by \"single\" ... while member m
// holds partition 0".)

package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/postgres"
)

// TestFastPathHolderEditedByHand: a member owns partition 0 of g; an admin
// edits the key's leadership row so that it names a holder, expired; a new
// Coordinator's Acquire of g/0 must still find the partition held.
func TestFastPathHolderEditedByHand(t *testing.T) {
	t.Parallel()
	for _, edit := range []string{
		// a leadership table restored from a backup taken while a single-key grant held g/0, before the claim
		`UPDATE public.cluster_leadership SET holder_id = 'restored' WHERE resource = 'g/0'`,
		// the key kept for maintenance by hand, then left to lapse
		`UPDATE public.cluster_leadership SET holder_id = 'maintenance', expires_at = now() + interval '200 milliseconds' WHERE resource = 'g/0'`,
	} {
		t.Run(edit, func(t *testing.T) {
			dsn := newDB(t)
			c := open(t, dsn)
			ctx := ctxFor(t, time.Minute)
			m, err := c.JoinGroup(ctx, "g", "m", time.Minute, 0)
			if err != nil {
				t.Fatal(err)
			}
			tok := claim(t, c, m)
			if _, err := c.Pool().Exec(ctx, edit); err != nil {
				t.Fatalf("%s: %v", edit, err)
			}
			time.Sleep(300 * time.Millisecond) // past the edit's expiry
			// A Coordinator that has seen the group tables (its Acquire of
			// g/1, a key never written, looked them up) reads the partition row.
			warm := open(t, dsn)
			if _, err := warm.Acquire(ctx, "g/1", "warm", time.Minute); err != nil {
				t.Fatal(err)
			}
			if g, err := warm.Acquire(ctx, "g/0", "warm", time.Minute); !errors.As(err, new(*tenure.HeldError)) {
				t.Errorf("after %s, Acquire(g/0) by a Coordinator that has seen the group tables = %v, %v; want a *tenure.HeldError", edit, g, err)
			}
			fresh, err := postgres.New(ctx, c.Pool())
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			g, err := fresh.Acquire(ctx, "g/0", "single", time.Minute)
			lost, cerr := c.CheckPartitions(ctx, m, []tenure.Grant{{Key: "g/0", Holder: m.ID, Token: tok, TTL: time.Minute, Sent: tenure.Now()}})
			t.Logf("Acquire(g/0) = %v, %v; member's CheckPartitions: lost %v, %v", g, err, lost, cerr)
			var held *tenure.HeldError
			if !errors.As(err, &held) {
				t.Errorf("after %s, a new Coordinator's Acquire(g/0) = %v, %v while member %s holds partition 0 with %d: want a *tenure.HeldError naming %s", edit, g, err, m.ID, tok, m.ID)
			}
		})
	}
}
