package term

import (
	"strings"
	"testing"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/pgtest"
)

// TestExitByCausePostgres: every command that reads the coordinator
// (status, watch, run) exits by the cause of a PostgreSQL failure, with
// words that say what to do: a database that does not exist, or an
// sslmode that requires TLS of a server without it, is a configuration
// (78); a role without the privilege is a refusal (77) — watch included,
// which used to call it "coordinator unreachable" and wait for ever.
func TestExitByCausePostgres(t *testing.T) {
	t.Parallel()
	srv := e2e.Postgres(t)
	db := srv.NewDatabase(t)
	if res := e2e.RunTenure(t, nil, "--postgres", db, "run", "--key", "k", "--", "true"); res.Code != 0 {
		t.Fatalf("%s: exit %d (making the table)\n%s", res.Description, res.Code, res.Stderr)
	}
	noPriv, _ := srv.NewRole(t, db)
	commands := map[string][]string{
		"status": {"status", "--key", "k"},
		"watch":  {"watch", "--key", "k"},
		"run":    {"run", "--key", "k", "--wait-timeout", "20s", "--", "true"},
	}
	for _, tc := range []struct {
		name, dsn string
		code      int
		says      string
	}{
		{"no database", pgtest.WithParams(db, map[string]string{"dbname": "tenure_no_such_db"}), cli.ExitConfig, "create the database"},
		{"sslmode=require without TLS", pgtest.WithParams(db, map[string]string{"sslmode": "require"}), cli.ExitConfig, "does not accept TLS, which its sslmode requires"},
		{"no privilege", noPriv, cli.ExitNoPerm, "permission denied"},
	} {
		for cmd, args := range commands {
			t.Run(tc.name+"/"+cmd, func(t *testing.T) {
				t.Parallel()
				res := e2e.RunTenure(t, nil, append([]string{"--dial-timeout", "5s", "--postgres", tc.dsn}, args...)...)
				if res.Code != tc.code || !strings.Contains(res.Stderr, tc.says) {
					t.Errorf("%s: exit %d; want %d, saying %q\n%s", res.Description, res.Code, tc.code, tc.says, res.Stderr)
				}
				if strings.Contains(res.Stderr, "unreachable") {
					t.Errorf("%s calls the coordinator unreachable:\n%s", res.Description, res.Stderr)
				}
			})
		}
	}
}
