package postgres_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestForeignRowAtMaxToken: a foreign row whose fencing_token is bigint's
// maximum, once freed with RemoveForeign, leaves its key in one of two
// states a user can see: Acquire grants it with a greater token, or
// Acquire is refused (tenure.ErrRefused) with an error that names the key
// and says why (no token can be greater). It never grants a
// token that is not greater, and ListForeign keeps the key visible while
// Acquire cannot take it.
func TestForeignRowAtMaxToken(t *testing.T) {
	t.Parallel()
	c := open(t, newDB(t))
	ctx := ctxFor(t, 30*time.Second)
	if _, err := c.Pool().Exec(ctx, `INSERT INTO `+c.Table()+` (resource, holder_id, fencing_token, expires_at) VALUES
	('m/max', 'mallory', $1, 'infinity')`, int64(math.MaxInt64)); err != nil {
		t.Fatal(err)
	}
	rs, err := c.ListForeign(ctx, "m/")
	if err != nil || len(rs) != 1 || rs[0].Token != math.MaxInt64 {
		t.Fatalf("ListForeign(m/) = %+v, %v; want m/max with token %d", rs, err, int64(math.MaxInt64))
	}
	if ok, err := c.RemoveForeign(ctx, rs[0]); !ok || err != nil {
		t.Fatalf("RemoveForeign(%+v) = %v, %v; want true, nil", rs[0], ok, err)
	}
	g, err := c.Acquire(ctx, "m/max", "h1", time.Second)
	t.Logf("Acquire after RemoveForeign of a bigint-max token: %v, %v", g, err)
	if err == nil && g.Token <= rs[0].Token {
		t.Fatalf("Acquire(m/max) = token %d; want a token above %d", g.Token, rs[0].Token)
	}
	if err != nil && (!errors.Is(err, tenure.ErrRefused) || !strings.Contains(err.Error(), `"m/max"`) || !strings.Contains(err.Error(), "maximum")) {
		t.Fatalf("Acquire(m/max) = %v; want an error matching tenure.ErrRefused that names the key and says its token is at the maximum", err)
	}
}
