package postgres

import (
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// dsnSeeds are DSNs in both forms, with and without passwords, well formed
// and not.
var dsnSeeds = []string{
	"postgres://app:hunter2@db.internal:5432/app",
	"postgresql://app:hun%40ter2@db.internal/app?sslmode=disable",
	"postgres://app:pw@with@at@host/db",
	"postgres://app@host/db?password=hunter2&application_name=x",
	"postgres://:hunter2@host,other:5433/db",
	"postgres://app:hunter2@[::1]:5432/db",
	"host=db.internal user=app password='hunter 2' dbname=app",
	"host=h password=hunter2",
	"host=h password = 'it\\'s a secret'",
	"password=hunter2 host=h connect_timeout=3",
	"host=h password=",
	"host=h password='unterminated",
	"postgres://app:hunter2@host:notaport/db",
	"",
}

// readsFiles reports whether parsing dsn would read a file (certificates,
// a password or service file), which the targets leave alone.
func readsFiles(dsn string) bool {
	s := strings.ToLower(dsn)
	if u, err := url.QueryUnescape(s); err == nil {
		s += " " + u
	}
	for _, w := range []string{"ssl", "passfile", "service", "krb", "gss"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// FuzzRedactDSN: whatever the DSN, RedactDSN leaves no password that pgx
// would read from it: the redacted DSN, when pgx parses it, has another
// password, and the password's text, and each word of it, is gone from it.
func FuzzRedactDSN(f *testing.F) {
	f.Setenv("PGPASSWORD", "")
	f.Setenv("PGPASSFILE", "/nonexistent/pgpass")
	f.Setenv("PGSERVICEFILE", "/nonexistent/pg_service.conf")
	for _, s := range dsnSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		r := RedactDSN(dsn)
		if readsFiles(dsn) || readsFiles(r) {
			return
		}
		cfg, err := pgconn.ParseConfig(dsn)
		if err != nil || cfg.Password == "" || cfg.Password == redacted {
			return
		}
		pw := cfg.Password
		if rc, err := pgconn.ParseConfig(r); err == nil && rc.Password == pw {
			t.Fatalf("RedactDSN(%q) = %q, which still carries password %q", dsn, r, pw)
		}
		// The password, and each space-separated part of it, loses at
		// least one of its occurrences in the DSN, if it is written there as
		// it reads: in a URL's user info or query it may be percent-encoded,
		// and the same text elsewhere a host's or a database's name.
		written := dsn
		if rest, ok := cutScheme(dsn); ok {
			_, query, _ := strings.Cut(rest, "?")
			written = rest[:max(strings.LastIndex(rest, "@"), 0)] + " " + query
		}
		for _, part := range append(strings.Fields(pw), pw) {
			if n := strings.Count(dsn, part); len(part) >= 4 && n > 0 && strings.Contains(written, part) && strings.Count(r, part) >= n {
				t.Fatalf("RedactDSN(%q) = %q: %q of password %q left in it", dsn, r, part, pw)
			}
		}
	})
}

// FuzzScrub: when scrub says it could remove the passwords of dsn from a
// message, none of them, nor the password pgx reads from dsn, is left.
func FuzzScrub(f *testing.F) {
	f.Setenv("PGPASSWORD", "")
	f.Setenv("PGPASSFILE", "/nonexistent/pgpass")
	f.Setenv("PGSERVICEFILE", "/nonexistent/pg_service.conf")
	for _, s := range dsnSeeds {
		f.Add("cannot parse `"+s+"`: failed", s)
	}
	f.Add("hunter2 hunter2", "host=h password=hunter2")
	f.Add("hun%40ter2 hun@ter2", "postgres://a:hun%40ter2@h/db")
	f.Fuzz(func(t *testing.T, msg, dsn string) {
		out, ok := scrub(msg, dsn)
		if !ok {
			return
		}
		pws := passwords(dsn)
		if !readsFiles(dsn) {
			if cfg, err := pgconn.ParseConfig(dsn); err == nil && cfg.Password != "" {
				pws = append(pws, cfg.Password)
			}
		}
		for _, p := range pws {
			if len(p) >= 4 && strings.Contains(out, p) && strings.Trim(p, "x") != "" {
				t.Fatalf("scrub(%q, %q) = %q: password %q left in it", msg, dsn, out, p)
			}
		}
	})
}
