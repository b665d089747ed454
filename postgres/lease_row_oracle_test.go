package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
)

// Adversarial tests of the PostgreSQL token path with real Electors: the
// leader's connections go through a tcpproxy (faults below the client), a
// rival Elector campaigns directly, and each term is checked against the
// leadership row, read on a connection of its own: at every renewal the
// row's expiry must be at least Sent + TTL (the lease counts from no
// earlier than the request was sent), and right after a term's last act
// the lease must still be that term's, or have been granted to another
// after that act (acquired_at). Terms of the two Electors must not overlap.

// oracleKey has no '/': an Acquire of a key that can name a partition
// ("group/name") first looks up the group tables, in a round trip of its
// own, and TestLateStatementsOnPostgres delays the acquisition
// statement itself.
const oracleKey = "adv-k"

// oracleConfig is an Elector config with a short TTL: safe lease 1.285s,
// renewals every 500ms, each attempt given up to a second (so that 400ms
// of latency on a loaded machine is not a failure).
func oracleConfig(holder string) tenure.Config {
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder = oracleKey, holder
	cfg.TTL, cfg.Margin, cfg.MaxDrift = 1500*time.Millisecond, 200*time.Millisecond, 0.01
	cfg.RequestTimeout = time.Second
	return cfg
}

// leaseRow is the leadership row of oracleKey as read at one instant.
type leaseRow struct {
	holder            string
	token             uint64
	acquired, expires pgtype.Timestamptz
	now               time.Time // clock_timestamp() of the read
}

func readLease(ctx context.Context, db *pgxpool.Pool) (leaseRow, error) {
	var r leaseRow
	var holder pgtype.Text
	var token int64
	err := db.QueryRow(ctx, `SELECT holder_id, fencing_token, acquired_at, expires_at, clock_timestamp()
FROM public.cluster_leadership WHERE resource = $1`, oracleKey).Scan(&holder, &token, &r.acquired, &r.expires, &r.now)
	r.holder, r.token = holder.String, uint64(token)
	return r, err
}

// pgTerm is one term as its leader function saw it.
type pgTerm struct {
	holder        string
	token         uint64
	start, lastOK time.Time // lastOK: the last instant Check passed (and the term acted)
	cause         error     // why the term's context ended, if it did
	ended         bool
}

// pgOracle checks terms of Electors on PostgreSQL against the leadership
// row, read through db (never faulted).
type pgOracle struct {
	db  *pgxpool.Pool
	ttl time.Duration

	mu       sync.Mutex
	terms    []*pgTerm
	bad      []string
	renewals map[string]int // by holder: renewals checked
}

func (o *pgOracle) fail(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bad = append(o.bad, fmt.Sprintf(format, args...))
}

// lead returns a leader function that acts every 5ms while its term's
// Check passes, checks the row at each renewal and after its last act, and
// returns when the term ends. during, when not nil, runs once, in a
// goroutine, from the start of the first term of the Elector.
func (o *pgOracle) lead(holder string, during func(*tenure.Term)) func(context.Context, *tenure.Term) error {
	var once sync.Once
	return func(ctx context.Context, term *tenure.Term) error {
		pt := &pgTerm{holder: holder, token: term.Token(), start: time.Now()}
		o.mu.Lock()
		o.terms = append(o.terms, pt)
		o.mu.Unlock()
		var wg sync.WaitGroup
		defer wg.Wait()
		once.Do(func() {
			if during != nil {
				wg.Go(func() { during(term) })
			}
		})
		sent := term.Grant().Sent
		for ctx.Err() == nil && term.Check() == nil {
			now := time.Now()
			o.mu.Lock()
			pt.lastOK = now
			o.mu.Unlock()
			if g := term.Grant(); g.Sent != sent {
				sent = g.Sent
				o.checkRenewal(pt, g)
			}
			sleepCtx(ctx, 5*time.Millisecond)
		}
		o.checkEnd(pt)
		o.mu.Lock()
		pt.ended = true
		pt.cause = context.Cause(term.Context())
		o.mu.Unlock()
		return nil
	}
}

// checkRenewal checks the row after a renewal of pt that was sent at
// g.Sent: the lease must reach at least Sent + TTL on the database's clock.
func (o *pgOracle) checkRenewal(pt *pgTerm, g tenure.Grant) {
	o.mu.Lock()
	if o.renewals == nil {
		o.renewals = map[string]int{}
	}
	o.renewals[pt.holder]++
	o.mu.Unlock()
	r, err := readLease(context.Background(), o.db)
	switch {
	case err != nil:
		o.fail("reading the row after %s's renewal: %v", pt.holder, err)
	case r.token != pt.token:
		// A later grant to someone: only fine if this term's deadline has
		// passed meanwhile (the read is slow), which checkEnd judges.
	case r.expires.InfinityModifier != pgtype.Finite:
	case r.expires.Time.Before(g.Sent.Time().Round(0).Add(g.TTL - time.Microsecond)):
		o.fail("%s's renewal sent at %s extended the lease only to %s: %s short of Sent + TTL",
			pt.holder, g.Sent.Time().Round(0).Format(time.StampMicro), r.expires.Time.Format(time.StampMicro),
			g.Sent.Time().Round(0).Add(g.TTL).Sub(r.expires.Time))
	}
}

// checkEnd reads the row right after pt's last act: the lease must still
// be pt's, or have been granted again after that act.
func (o *pgOracle) checkEnd(pt *pgTerm) {
	r, err := readLease(context.Background(), o.db)
	o.mu.Lock()
	last := pt.lastOK.Round(0) // on the wall clock, as the database's
	o.mu.Unlock()
	switch {
	case err != nil:
		o.fail("reading the row after %s's term %d: %v", pt.holder, pt.token, err)
	case pt.lastOK.IsZero():
	case r.token == pt.token && r.expires.InfinityModifier == pgtype.Finite && !last.Before(r.expires.Time):
		o.fail("%s acted with token %d at %s, %s after its lease expired (%s)",
			pt.holder, pt.token, last.Format(time.StampMicro), last.Sub(r.expires.Time), r.expires.Time.Format(time.StampMicro))
	case r.token != pt.token && !last.Before(r.acquired.Time):
		o.fail("%s acted with token %d at %s, %s after %s was granted token %d",
			pt.holder, pt.token, last.Format(time.StampMicro), last.Sub(r.acquired.Time), r.holder, r.token)
	}
}

// violations lists the checks that failed, terms whose spans overlap, and
// tokens that do not increase.
func (o *pgOracle) violations() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := append([]string(nil), o.bad...)
	for i, a := range o.terms {
		if i > 0 && a.token <= o.terms[i-1].token {
			out = append(out, fmt.Sprintf("token %d of %s after %d of %s: not increasing", a.token, a.holder, o.terms[i-1].token, o.terms[i-1].holder))
		}
		for _, b := range o.terms[i+1:] {
			if !a.lastOK.IsZero() && !b.lastOK.IsZero() && b.start.Before(a.lastOK) && a.start.Before(b.lastOK) {
				out = append(out, fmt.Sprintf("terms %d of %s and %d of %s both acted for %s", a.token, a.holder, b.token, b.holder, a.lastOK.Sub(b.start)))
			}
		}
	}
	return out
}

func (o *pgOracle) describe() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.terms) == 0 {
		return "  (none)"
	}
	var b strings.Builder
	origin := o.terms[0].start
	for _, pt := range o.terms {
		fmt.Fprintf(&b, "  %s token %d: [%s, %s] ended %v: %v\n", pt.holder, pt.token, pt.start.Sub(origin).Round(time.Millisecond),
			pt.lastOK.Sub(origin).Round(time.Millisecond), pt.ended, pt.cause)
	}
	return b.String()
}

func (o *pgOracle) renewalsOf(holder string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.renewals[holder]
}

func (o *pgOracle) termsOf(holder string) []pgTerm {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []pgTerm
	for _, pt := range o.terms {
		if pt.holder == holder {
			out = append(out, *pt)
		}
	}
	return out
}

// sleepCtx sleeps d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// proxied returns a proxy to dsn's server and dsn through it.
func proxied(t *testing.T, dsn string) (*tcpproxy.Proxy, string) {
	t.Helper()
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tcpproxy.New("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	host, port, _ := net.SplitHostPort(p.Addr())
	return p, pgtest.WithParams(dsn, map[string]string{"host": host, "port": port})
}

// faultEnv is one adversarial run: a leads through the proxy, b directly.
type faultEnv struct {
	t      *testing.T
	proxy  *tcpproxy.Proxy
	db     *pgxpool.Pool // direct, for the oracle and for locks
	oracle *pgOracle
}

// lockRow holds the row's lock in a transaction of its own for d.
func (env *faultEnv) lockRow(d time.Duration) {
	ctx := context.Background()
	tx, err := env.db.Begin(ctx)
	if err != nil {
		env.oracle.fail("begin: %v", err)
		return
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM public.cluster_leadership WHERE resource = $1 FOR UPDATE`, oracleKey); err != nil {
		env.oracle.fail("lock the row: %v", err)
		return
	}
	time.Sleep(d)
}

// runElector runs an Elector of cfg on c with fn until the returned stop
// is called (or t ends), campaigning again whenever Run returns.
func runElector(t *testing.T, c tenure.Coordinator, cfg tenure.Config, fn func(context.Context, *tenure.Term) error) (stop func()) {
	t.Helper()
	e, err := tenure.NewElector(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := e.Run(ctx, fn); err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				t.Errorf("%s: Run() = %v", cfg.Holder, err)
			}
		}
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// waitUntil polls cond every 10ms for up to d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
