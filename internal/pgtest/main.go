package pgtest

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure/internal/require"
)

// Main starts a server, hands it (or the reason there is none) to use, runs
// the tests, stops the server and returns m.Run's exit code, for TestMain:
//
//	os.Exit(pgtest.Main(m, func(s *pgtest.Server, err error) { srv, srvErr = s, err }))
//
// The server is stopped before Main returns, so a goroutine-leak check run
// afterwards (goleak.VerifyTestMain with a TestingM whose Run calls Main)
// sees none of its goroutines.
func Main(m interface{ Run() int }, use func(*Server, error)) int {
	if !flag.Parsed() {
		flag.Parse() // for testing.Verbose
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	start := time.Now()
	s, err := Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: no PostgreSQL server: %v\n", err)
	} else if testing.Verbose() && !s.external {
		fmt.Fprintf(os.Stderr, "pgtest: started PostgreSQL in %s at %s (%s)\n", time.Since(start).Round(time.Millisecond), s.dir, s.dsn)
	}
	use(s, err)
	code := m.Run()
	if s != nil {
		if err := s.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stop: %v\n", err)
		}
	}
	return code
}

// Need returns s when there is a server. Otherwise it ends t as
// require.Postgres decides: a failure when PostgreSQL is required
// (TENURE_REQUIRE_POSTGRES, or CI=true), a skip with a notice otherwise.
func Need(t testing.TB, s *Server, err error) *Server {
	t.Helper()
	if s != nil && err == nil {
		return s
	}
	if err == nil {
		err = fmt.Errorf("no server was started (is pgtest.Main called from TestMain?)")
	}
	require.Postgres.Missing(t, err)
	return nil
}

// NeedRestart skips t unless s can be restarted (it was started here, not
// named by TENURE_TEST_POSTGRES).
func NeedRestart(t testing.TB, s *Server) {
	t.Helper()
	if s.external {
		t.Skipf("cannot restart the external server named by %s", EnvDSN)
	}
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// NewDatabase creates an empty database for t, dropped when t ends, and
// returns a superuser DSN for it.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	s.mu.Lock()
	s.seq++
	n := s.seq
	s.mu.Unlock()
	name := nonIdent.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	name = fmt.Sprintf("t%d_%d_%s", os.Getpid(), n, name)
	s.Exec(t, s.dsn, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, s.dsn)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return WithParams(s.dsn, map[string]string{"dbname": name})
}

// NewRole creates a login role for t (dropped, with what it owns, when t
// ends), runs grants (SQL statements; "%s" in each is replaced by the
// quoted role name) as superuser on db, and returns a DSN that connects to
// db as that role, and the role's name.
func (s *Server) NewRole(t testing.TB, db string, grants ...string) (dsn, name string) {
	t.Helper()
	s.mu.Lock()
	s.seq++
	name = fmt.Sprintf("role_%d_%d", os.Getpid(), s.seq)
	s.mu.Unlock()
	q := pgx.Identifier{name}.Sanitize()
	password := fmt.Sprintf("pw-%d", time.Now().UnixNano())
	s.Exec(t, s.dsn, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", q, password))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, dsn := range []string{db, s.dsn} {
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				continue // the database may be gone already
			}
			_, _ = conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", name)
			_, _ = conn.Exec(ctx, "DROP OWNED BY "+q)
			conn.Close(ctx)
		}
		_ = execOnce(ctx, s.dsn, "DROP ROLE IF EXISTS "+q)
	})
	for _, g := range grants {
		s.Exec(t, db, strings.ReplaceAll(g, "%s", q))
	}
	return WithParams(db, map[string]string{"user": name, "password": password}), name
}

// Exec runs sql on dsn and fails t on error.
func (s *Server) Exec(t testing.TB, dsn, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := execOnce(ctx, dsn, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func execOnce(ctx context.Context, dsn, sql string, args ...any) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// WithParams returns dsn with the given connection parameters set
// ("dbname", "user", "password", "application_name", …). It handles both
// URL ("postgres://…") and keyword/value DSNs.
func WithParams(dsn string, params map[string]string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err == nil {
			q := u.Query()
			for _, k := range keys {
				v := params[k]
				switch k {
				case "dbname":
					u.Path = "/" + v
				case "user":
					if p, ok := u.User.Password(); ok {
						u.User = url.UserPassword(v, p)
					} else {
						u.User = url.User(v)
					}
				case "password":
					u.User = url.UserPassword(u.User.Username(), v)
				default:
					q.Set(k, v)
				}
			}
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	var b strings.Builder
	b.WriteString(dsn)
	for _, k := range keys {
		v := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(params[k])
		fmt.Fprintf(&b, " %s='%s'", k, v)
	}
	return b.String()
}
