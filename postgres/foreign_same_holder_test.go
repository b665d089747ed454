package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestAcquireBySameHolderOfForeignRow: Acquire naming the holder_id a
// foreign row carries does not take the row over.
func TestAcquireBySameHolderOfForeignRow(t *testing.T) {
	t.Parallel()
	c := open(t, newDB(t))
	ctx := ctxFor(t, 30*time.Second)
	if _, err := c.Pool().Exec(ctx, `INSERT INTO `+c.Table()+` (resource, holder_id, fencing_token, expires_at) VALUES
	('s/inf', 'mallory', 5, 'infinity'), ('s/far', 'mallory', 6, now() + interval '3 days')`); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"s/inf", "s/far"} {
		if g, err := c.Acquire(ctx, key, "mallory", time.Second); !errors.Is(err, tenure.ErrHeld) {
			t.Errorf("Acquire(%s, mallory) = %v, %v; want ErrHeld: the row is foreign", key, g, err)
		}
	}
	if rs, err := c.ListForeign(ctx, "s/"); err != nil || len(rs) != 2 {
		t.Errorf("ListForeign(s/) = %+v, %v; want both rows", rs, err)
	}
}
