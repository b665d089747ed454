package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/postgres"
)

// TestLeadershipRowSecurityRefused: a leadership table with row security
// enabled, forced or not, under which a policy can hide a live grant's row
// from tenure's statements (and its key be granted again), is refused by
// New with ErrTableShape naming row security.
func TestLeadershipRowSecurityRefused(t *testing.T) {
	t.Parallel()
	for name, ddl := range map[string]string{
		"enabled": `ENABLE ROW LEVEL SECURITY`,
		"forced":  `ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dsn := newDB(t)
			c := open(t, dsn)
			ctx := ctxFor(t, 30*time.Second)
			if _, err := c.Pool().Exec(ctx, `ALTER TABLE `+c.Table()+` `+ddl+`; CREATE POLICY hide ON `+c.Table()+` USING (holder_id IS NULL)`); err != nil {
				t.Fatal(err)
			}
			_, err := postgres.Dial(ctx, dsn)
			if !errors.Is(err, postgres.ErrTableShape) || !strings.Contains(err.Error(), "row security") {
				t.Errorf("Dial beside a leadership table with row security %s = %v; want ErrTableShape naming row security", name, err)
			}
		})
	}
}
