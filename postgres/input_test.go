package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/postgres"
)

const secret = "s3cr3t-Pa55"

// TestOpenMalformedDSN: a DSN that cannot be parsed is named in the error,
// without its password.
func TestOpenMalformedDSN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, dsn, mention string }{
		{"url bad port", "postgres://app:" + secret + "@db.example:notaport/app", "db.example"},
		{"url broken", "postgres://app:" + secret + "@[::1/app", "app:xxxxx@"},
		{"kv bad port", "host=db.example port=abc password=" + secret, "db.example"},
		{"kv quoted password", "host=db.example port=x password='" + secret + " x'", "db.example"},
		{"kv unterminated quote", "host=db.example password='" + secret, "db.example"},
		{"garbage", "this is not a dsn", "this is not a dsn"},
		{"bad sslmode", "host=db.example sslmode=sometimes password=" + secret, "sslmode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := postgres.Dial(context.Background(), tc.dsn)
			if err == nil {
				c.Close()
				t.Fatalf("Dial(%q) error = nil; want ErrInvalidDSN", tc.dsn)
			}
			if !errors.Is(err, postgres.ErrInvalidDSN) {
				t.Errorf("Dial() error = %v; want it to wrap ErrInvalidDSN", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Dial() error = %v; it shows the password", err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("Dial() error = %v; want it to mention %q", err, tc.mention)
			}
		})
	}
}

// TestOpenUnreachable: a server that refuses or does not answer gives a
// clear error, naming the address, within the connect timeout.
func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// A listener that accepts connections and never answers: the TCP
	// handshake succeeds and the startup message gets no reply.
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	var accepted []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			accepted = append(accepted, c)
		}
	}()
	defer func() {
		mute.Close()
		<-done
		for _, c := range accepted {
			c.Close()
		}
	}()
	mutePort := mute.Addr().(*net.TCPAddr).Port

	for _, tc := range []struct {
		name, dsn, mention string
		within             time.Duration
	}{
		{"refused", fmt.Sprintf("host=127.0.0.1 port=%d user=app password=%s connect_timeout=2", closedPort, secret), fmt.Sprint(closedPort), 3 * time.Second},
		{"silent", fmt.Sprintf("postgres://app:%s@127.0.0.1:%d/app?connect_timeout=1", secret, mutePort), fmt.Sprint(mutePort), 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			c, err := postgres.Dial(context.Background(), tc.dsn)
			took := time.Since(start)
			if err == nil {
				c.Close()
				t.Fatalf("Dial() error = nil; want a connection error")
			}
			t.Logf("Dial() error after %s: %v", took, err)
			if took > tc.within {
				t.Errorf("Dial() took %s; want an error within %s (the connect timeout)", took, tc.within)
			}
			if errors.Is(err, postgres.ErrInvalidDSN) {
				t.Errorf("Dial() error = %v; want a connection error, not ErrInvalidDSN", err)
			}
			if msg := err.Error(); strings.Contains(msg, secret) || !strings.Contains(msg, "127.0.0.1") || !strings.Contains(msg, tc.mention) {
				t.Errorf("Dial() error = %v; want it to name 127.0.0.1 and %s, without the password", err, tc.mention)
			}
		})
	}
}

// TestMissingPrivileges: a role that may not create the table gets an error
// naming the table; once the table exists and the role may use it, it works;
// a read-only role can read but its acquisitions fail (no false success).
func TestMissingPrivileges(t *testing.T) {
	t.Parallel()
	srv := server(t)
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	srv.Exec(t, dsn, "REVOKE CREATE ON SCHEMA public FROM PUBLIC")
	userDSN, _ := srv.NewRole(t, dsn)
	_, err := postgres.Dial(ctx, userDSN)
	if err == nil || !strings.Contains(err.Error(), `"cluster_leadership"`) || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("Dial() as a role without CREATE = %v; want a permission error naming the table", err)
	}

	admin := open(t, dsn) // creates the table
	if _, err := admin.Acquire(ctx, "k", "admin", time.Minute); err != nil {
		t.Fatal(err)
	}
	readerDSN, _ := srv.NewRole(t, dsn, "GRANT SELECT ON cluster_leadership TO %s")
	reader := open(t, readerDSN)
	if g, ok, err := reader.Leader(ctx, "k"); err != nil || !ok || g.Holder != "admin" {
		t.Fatalf("read-only Leader() = %v, %v, %v; want admin's grant", g, ok, err)
	}
	if g, err := reader.Acquire(ctx, "other", "reader", time.Second); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("read-only Acquire() = %v, %v; want a permission error", g, err)
	}

	writerDSN, _ := srv.NewRole(t, dsn, "GRANT SELECT, INSERT, UPDATE ON cluster_leadership TO %s")
	writer := open(t, writerDSN)
	g, err := writer.Acquire(ctx, "other", "writer", time.Second)
	if err != nil {
		t.Fatalf("Acquire() by a role with SELECT, INSERT, UPDATE error = %v", err)
	}
	if err := writer.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
}

// TestTableShape: an existing leadership table of another shape is refused
// with an error naming the table and the column.
func TestTableShape(t *testing.T) {
	t.Parallel()
	srv := server(t)
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	for _, tc := range []struct{ name, ddl, column string }{
		{"missing column", `(resource text PRIMARY KEY, fencing_token bigint, acquired_at timestamptz, expires_at timestamptz)`, `"holder_id" is missing`},
		{"timestamp without time zone", `(resource text PRIMARY KEY, holder_id text, fencing_token bigint, acquired_at timestamptz, expires_at timestamp)`, `"expires_at" is timestamp without time zone`},
		{"integer token", `(resource text PRIMARY KEY, holder_id text, fencing_token integer, acquired_at timestamptz, expires_at timestamptz)`, `"fencing_token" is integer`},
		{"no unique resource", `(resource text, holder_id text, fencing_token bigint, acquired_at timestamptz, expires_at timestamptz)`, `"resource" has no unique index`},
		{"nullable expires_at", `(resource text PRIMARY KEY, holder_id text, fencing_token bigint NOT NULL, acquired_at timestamptz, expires_at timestamptz)`, `"expires_at" may be NULL`},
		{"nullable token", `(resource text PRIMARY KEY, holder_id text, fencing_token bigint, acquired_at timestamptz, expires_at timestamptz NOT NULL)`, `"fencing_token" may be NULL`},
		{"extra required column", `(resource text PRIMARY KEY, holder_id text, fencing_token bigint, acquired_at timestamptz, expires_at timestamptz, region text NOT NULL)`, `"region" is NOT NULL without a default`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := strings.ReplaceAll(strings.ToLower(tc.name), " ", "_")
			srv.Exec(t, dsn, "CREATE TABLE "+table+" "+tc.ddl)
			c, err := postgres.Dial(ctx, dsn, postgres.WithTable(table))
			if err == nil {
				c.Close()
				t.Fatalf("Dial(WithTable(%q)) error = nil; want ErrTableShape", table)
			}
			if !errors.Is(err, postgres.ErrTableShape) || !strings.Contains(err.Error(), `"`+table+`"`) || !strings.Contains(err.Error(), tc.column) {
				t.Fatalf("Dial() error = %v; want ErrTableShape naming %q and %s", err, table, tc.column)
			}
		})
	}
	t.Run("view", func(t *testing.T) {
		srv.Exec(t, dsn, "CREATE VIEW leadership_view AS SELECT 1 AS x")
		_, err := postgres.Dial(ctx, dsn, postgres.WithTable("leadership_view"))
		if !errors.Is(err, postgres.ErrTableShape) || !strings.Contains(err.Error(), "is not a table") {
			t.Fatalf("Dial() on a view error = %v; want ErrTableShape, not a table", err)
		}
	})
	t.Run("seed shape is accepted", func(t *testing.T) {
		srv.Exec(t, dsn, `CREATE TABLE seed_leadership (
			resource varchar(255) PRIMARY KEY, holder_id varchar(255), fencing_token bigint NOT NULL DEFAULT 0,
			acquired_at timestamptz, expires_at timestamptz NOT NULL DEFAULT now(), note text)`)
		c := open(t, dsn, postgres.WithTable("seed_leadership"))
		if _, err := c.Acquire(ctx, "k", "h", time.Second); err != nil {
			t.Fatalf("Acquire() on a seed-shaped table error = %v", err)
		}
	})
}

// TestInjection: holders with quotes and semicolons are stored and reported
// verbatim (they are parameters); such keys are rejected by validation;
// identifiers with quotes are quoted.
func TestInjection(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	c := open(t, dsn)
	holders := []string{
		`x'); DROP TABLE cluster_leadership; --`,
		`"; DELETE FROM cluster_leadership; "`,
		`O'Brien "the boss"; $1 \ %s`,
	}
	for i, h := range holders {
		key := fmt.Sprintf("inj/%d", i)
		g, err := c.Acquire(ctx, key, h, time.Minute)
		if err != nil {
			t.Fatalf("Acquire(holder %q) error = %v", h, err)
		}
		if l, ok, err := c.Leader(ctx, key); err != nil || !ok || l.Holder != h {
			t.Fatalf("Leader() = %v, %v, %v; want holder %q verbatim", l, ok, err, h)
		}
		_, err = c.Acquire(ctx, key, "someone-else", time.Minute)
		var he *tenure.HeldError
		if !errors.As(err, &he) || he.Holder != h || he.Token != g.Token {
			t.Fatalf("Acquire() by another = %v; want a HeldError naming %q", err, h)
		}
		if _, err := c.Renew(ctx, g); err != nil {
			t.Fatalf("Renew() error = %v", err)
		}
	}
	var n int
	queryRow(t, dsn, `SELECT count(*) FROM cluster_leadership`, nil, &n)
	if n != len(holders) {
		t.Fatalf("cluster_leadership has %d rows; want %d (nothing injected)", n, len(holders))
	}

	for _, key := range []string{`a'b`, `a;b`, `a"b`, `x'; DROP TABLE cluster_leadership; --`, `a b`} {
		_, err := c.Acquire(ctx, key, "h", time.Second)
		if !errors.Is(err, tenure.ErrInvalidKey) || !strings.Contains(err.Error(), fmt.Sprintf("%q", key)) {
			t.Errorf("Acquire(key %q) error = %v; want ErrInvalidKey naming the key", key, err)
		}
		if _, _, err := c.Leader(ctx, key); !errors.Is(err, tenure.ErrInvalidKey) {
			t.Errorf("Leader(key %q) error = %v; want ErrInvalidKey", key, err)
		}
		if _, err := c.Watch(ctx, key); !errors.Is(err, tenure.ErrInvalidKey) {
			t.Errorf("Watch(key %q) error = %v; want ErrInvalidKey", key, err)
		}
	}
	for _, h := range []string{"", "a\x00b", "line\nbreak"} {
		if _, err := c.Acquire(ctx, "k", h, time.Second); !errors.Is(err, tenure.ErrInvalidHolder) {
			t.Errorf("Acquire(holder %q) error = %v; want ErrInvalidHolder", h, err)
		}
	}

	// Identifiers with quotes and semicolons are quoted, not spliced.
	srv := server(t)
	srv.Exec(t, dsn, `CREATE SCHEMA "odd""schema; --"`)
	odd := open(t, dsn,
		postgres.WithSchema(`odd"schema; --`),
		postgres.WithTable(`lead"ers; DROP TABLE cluster_leadership; --`),
		postgres.WithChannel(`chan"; LISTEN x; --`))
	g, err := odd.Acquire(ctx, "k", "h", time.Minute)
	if err != nil {
		t.Fatalf("Acquire() with odd identifiers error = %v", err)
	}
	w, err := odd.Watch(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-w; !ev.Held || ev.Grant.Token != g.Token {
		t.Fatalf("first Watch event = %+v; want held by %v", ev, g)
	}
	if err := odd.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w:
		if ev.Held {
			t.Fatalf("Watch event after release = %+v; want free", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no Watch event after release")
	}
	queryRow(t, dsn, `SELECT count(*) FROM "odd""schema; --"."lead""ers; DROP TABLE cluster_leadership; --"`, nil, &n)
	if n != 1 {
		t.Fatalf("odd table has %d rows; want 1", n)
	}
	queryRow(t, dsn, `SELECT count(*) FROM cluster_leadership`, nil, &n)
	if n != len(holders) {
		t.Fatalf("cluster_leadership has %d rows; want %d", n, len(holders))
	}
}

// TestInvalidOptions: bad options are reported, each naming the option.
func TestInvalidOptions(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	_, err := postgres.Dial(ctxFor(t, time.Minute), dsn,
		postgres.WithTable(""), postgres.WithChannel(strings.Repeat("c", 64)), postgres.WithPollInterval(0))
	for _, want := range []string{"WithTable is empty", "WithChannel", "WithPollInterval (0s) must be positive"} {
		if !errors.Is(err, postgres.ErrInvalidOption) || !errors.Is(err, tenure.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("Dial() error = %v; want ErrInvalidOption mentioning %q", err, want)
		}
	}
	if _, err := postgres.New(context.Background(), nil); err == nil {
		t.Error("New(nil pool) error = nil; want an error")
	}
}

// TestBadGrants: malformed grants are rejected before any SQL runs; a grant
// that was never made is lost.
func TestBadGrants(t *testing.T) {
	t.Parallel()
	c := open(t, newDB(t))
	ctx := ctxFor(t, time.Minute)
	good, err := c.Acquire(ctx, "k", "h", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		g    tenure.Grant
		want error
	}{
		{tenure.Grant{Key: "k", Holder: "h", Token: 0, TTL: time.Second}, tenure.ErrInvalidGrant},
		{tenure.Grant{Key: "k", Holder: "h", Token: good.Token, TTL: 0}, tenure.ErrInvalidTTL},
		{tenure.Grant{Key: "k", Holder: "h", Token: 1 << 63, TTL: time.Second}, tenure.ErrInvalidGrant},
		{tenure.Grant{Key: "k", Holder: "stranger", Token: good.Token, TTL: time.Second}, tenure.ErrLost},
	} {
		if _, err := c.Renew(ctx, tc.g); !errors.Is(err, tc.want) {
			t.Errorf("Renew(bad grant %d: %v) error = %v; want %v", i, tc.g, err, tc.want)
		}
	}
	if r, err := c.Renew(ctx, good); err != nil || r.Token != good.Token || r.Sent.IsZero() {
		t.Errorf("Renew(%v) = %v, %v; want it renewed, with Sent", good, r, err)
	}
	if err := c.Release(ctx, tenure.Grant{Key: "k", Holder: "h"}); !errors.Is(err, tenure.ErrInvalidGrant) {
		t.Errorf("Release(token 0) error = %v; want ErrInvalidGrant", err)
	}
	if l, ok, err := c.Leader(ctx, "k"); err != nil || !ok || l.Token != good.Token {
		t.Errorf("Leader() = %v, %v, %v; want %v untouched", l, ok, err, good)
	}
}
