package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/internal/refusaltest"
	"github.com/tenure-dev/tenure/postgres"
)

// TestRefusalStopsRun: a role that may read tenure's tables but not
// insert or update their rows opens a Coordinator (reads) and then has
// every write refused (SQLSTATE 42501): an Elector's Run and a partition
// group's Run return the refusal, matching tenure.ErrRefused with the
// *pgconn.PgError beneath it, instead of retrying it without end.
func TestRefusalStopsRun(t *testing.T) {
	t.Parallel()
	srv := server(t)
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	// The admin makes the leadership table and the group's.
	admin := open(t, dsn)
	m, err := admin.JoinGroup(ctx, "jobs-group", "admin", 10*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.LeaveGroup(ctx, m); err != nil {
		t.Fatal(err)
	}
	readerDSN, _ := srv.NewRole(t, dsn, "GRANT SELECT ON ALL TABLES IN SCHEMA public TO %s")
	refusaltest.Stops(t, open(t, readerDSN), "jobs", func(err error) bool {
		var pgErr *pgconn.PgError
		return errors.As(err, &pgErr) && pgErr.Code == "42501"
	})
}

// TestRefusedConnection: a login PostgreSQL refuses (no such role,
// SQLSTATE 28000) and a connection parameter it does not know (42704)
// make Dial's error match tenure.ErrRefused; a server that does not
// answer does not.
func TestRefusedConnection(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	for _, tc := range []struct {
		name string
		dsn  string
		want bool
	}{
		{"no such role", pgtest.WithParams(dsn, map[string]string{"user": "no_such_role"}), true},
		{"unknown parameter", pgtest.WithParams(dsn, map[string]string{"sslmod": "disable"}), true},
		{"no server", pgtest.WithParams(dsn, map[string]string{"host": "127.0.0.1", "port": "1", "connect_timeout": "2"}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := postgres.Dial(ctxFor(t, 30*time.Second), tc.dsn)
			if err == nil {
				c.Close()
				t.Fatal("Dial() succeeded")
			}
			var pgErr *pgconn.PgError
			if errors.Is(err, tenure.ErrRefused) != tc.want || tc.want && !errors.As(err, &pgErr) {
				t.Errorf("Dial() = %v; want matching tenure.ErrRefused: %t (with the PgError beneath)", err, tc.want)
			}
		})
	}
}

// TestRefusalClasses: PostgreSQL's answers that waiting does not change
// (a privilege, a login) match tenure.ErrRefused with the PgError still
// beneath; serialization failures, deadlocks, a server shutting down or
// starting, too many connections and a statement timeout do not.
func TestRefusalClasses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code string
		want bool
	}{
		{"42501", true}, {"28P01", true}, {"28000", true},
		{"40001", false}, {"40P01", false}, {"57P01", false}, {"57P03", false},
		{"53300", false}, {"57014", false}, {"42704", false}, {"22023", false},
	} {
		pgErr := &pgconn.PgError{Code: tc.code}
		got := postgres.Refusal(pgErr)
		var beneath *pgconn.PgError
		if errors.Is(got, tenure.ErrRefused) != tc.want || !errors.As(got, &beneath) {
			t.Errorf("refusal(SQLSTATE %s) = %v; want matching tenure.ErrRefused: %t, and the PgError beneath", tc.code, got, tc.want)
		}
	}
}
