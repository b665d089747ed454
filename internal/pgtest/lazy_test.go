package pgtest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure/internal/pgtest"
)

// A Lazy that no test needs starts no server and stops cleanly; the first
// Need starts one, every later Need returns that same server, and Stop
// shuts it down and removes its directory.
func TestLazy(t *testing.T) {
	var unused pgtest.Lazy
	if err := unused.Stop(); err != nil {
		t.Fatalf("Stop() of a Lazy never needed = %v; want nil", err)
	}

	var l pgtest.Lazy
	s := l.Need(t)
	if again := l.Need(t); again != s {
		t.Fatalf("second Need() = %p; want the first's server %p", again, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		t.Fatalf("connect to the started server: %v", err)
	}
	conn.Close(ctx)
	if s.External() {
		return
	}
	if err := l.Stop(); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	if _, err := os.Stat(s.Dir()); !os.IsNotExist(err) {
		t.Errorf("after Stop(), the server's directory %s: %v; want it removed", s.Dir(), err)
	}
	if c, err := pgx.Connect(ctx, s.DSN()); err == nil {
		c.Close(ctx)
		t.Errorf("after Stop(), the server still accepts connections")
	}
}
