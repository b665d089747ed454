package pgtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/tenure-dev/tenure/internal/pgtest"
)

// server is set once by TestMain, before any test runs.
var server struct {
	s   *pgtest.Server
	err error
}

type mainRunner struct{ m *testing.M }

func (r mainRunner) Run() int {
	return pgtest.Main(r.m, func(s *pgtest.Server, err error) { server.s, server.err = s, err })
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(mainRunner{m})
}

func TestWithParams(t *testing.T) {
	for _, tc := range []struct {
		name, dsn, want string
		params          map[string]string
	}{
		{"kv", "host=h port=1", "host=h port=1 dbname='d' user='u'", map[string]string{"user": "u", "dbname": "d"}},
		{"kv quoting", "host=h", `host=h password='a\'b\\c'`, map[string]string{"password": `a'b\c`}},
		{"url", "postgres://u:p@h:1/db?sslmode=disable", "postgres://v:p@h:1/x?application_name=a&sslmode=disable", map[string]string{"user": "v", "dbname": "x", "application_name": "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pgtest.WithParams(tc.dsn, tc.params); got != tc.want {
				t.Errorf("WithParams() = %q; want %q", got, tc.want)
			}
		})
	}
}

func TestServer(t *testing.T) {
	s := pgtest.Need(t, server.s, server.err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := s.NewDatabase(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if db == "postgres" {
		t.Errorf("NewDatabase() connects to %q; want a new database", db)
	}
	role, _ := s.NewRole(t, dsn)
	rc, err := pgx.Connect(ctx, role)
	if err != nil {
		t.Fatal(err)
	}
	var super bool
	if err := rc.QueryRow(ctx, "SELECT usesuper FROM pg_user WHERE usename = current_user").Scan(&super); err != nil {
		t.Fatal(err)
	}
	rc.Close(ctx)
	if super {
		t.Error("NewRole() role is a superuser; want an ordinary role")
	}
	if s.External() {
		return
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (v int); INSERT INTO t VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	for _, mode := range []pgtest.RestartMode{pgtest.Fast, pgtest.Immediate} {
		start := time.Now()
		if err := s.Restart(ctx, mode); err != nil {
			t.Fatalf("Restart(%d): %v", mode, err)
		}
		t.Logf("restart mode %d took %s", mode, time.Since(start))
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		var v int
		err = c.QueryRow(ctx, "SELECT v FROM t").Scan(&v)
		c.Close(ctx)
		if err != nil || v != 42 {
			t.Fatalf("after restart: v = %d, %v; want 42", v, err)
		}
	}
}
