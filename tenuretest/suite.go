package tenuretest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// An Option configures RunCoordinatorTests. Callers pass options to it.
type Option func(*options)

type options struct {
	ttl         time.Duration
	grace       time.Duration
	callTimeout time.Duration
	restart     func(t *testing.T)
	edits       *Edits
	noEdits     string // WithoutEdits' reason
}

// WithTTL sets the TTL the suite asks for. Default 2s, the smallest lease
// etcd grants. The expiry checks wait about one TTL, so a smaller TTL makes
// the suite faster against coordinators that grant it.
func WithTTL(ttl time.Duration) Option {
	return func(o *options) { o.ttl = ttl }
}

// WithGrace sets how long past a lease's expiry the suite waits for the
// coordinator to notice it (etcd revokes expired leases on a timer; events
// take a round trip). Default 2s. The suite never accepts an expiry earlier
// than the TTL: grace only bounds how late it may be.
func WithGrace(grace time.Duration) Option {
	return func(o *options) { o.grace = grace }
}

// WithCallTimeout bounds each coordinator call the suite makes. Default 10s.
// Callers pass it for a backend slower than that under load.
func WithCallTimeout(d time.Duration) Option {
	return func(o *options) { o.callTimeout = d }
}

// WithRestart adds the Restart subtest: it acquires a key, calls restart to
// crash and restart the coordinator's backend, and checks that the grant
// and the token sequence survived (tokens are durable). restart is called
// with the same *testing.T that was passed to the factory for that subtest,
// and must return once the backend accepts requests again (the suite
// retries failing calls for the grace period). The Restart subtest runs
// after all others have finished, never concurrently with them.
func WithRestart(restart func(t *testing.T)) Option {
	return func(o *options) { o.restart = restart }
}

// Edits edit a backend's record of a live grant the way an operator, or
// another program with the backend's credentials, could, behind the
// coordinator's back. Each is called with the same testing.TB that was passed
// to the factory for that subtest, and with a grant the suite was just given
// by Acquire; it fails tb if the edit cannot be made. All three are required.
//
// A backend whose records nothing outside its process can reach has nothing
// to wire, and says so with WithoutEdits: the memory coordinator keeps its
// leases in its own memory, where only its methods change them.
type Edits struct {
	// Lengthen makes g's record last d from now (d is an hour in the
	// suite), as far as the backend lets an operator: on etcd, the lease
	// revoked and granted again under its ID with TTL d (which deletes the
	// key, as any revocation does); on PostgreSQL, the row's expires_at
	// moved; on Kubernetes, the Lease's leaseDurationSeconds and renewTime.
	Lengthen func(tb testing.TB, g tenure.Grant, d time.Duration)
	// Shorten makes g's record last d from now, d below g's TTL. A
	// backend may round d up to what its record holds (whole seconds), as
	// long as it stays below g's TTL.
	Shorten func(tb testing.TB, g tenure.Grant, d time.Duration)
	// Remove deletes g's record: on etcd, its lease revoked; on
	// PostgreSQL, its row deleted; on Kubernetes, its Lease deleted.
	Remove func(tb testing.TB, g tenure.Grant)
}

// WithEdits adds the edit checks to Contract (EditLengthen, EditShorten,
// EditRemove): each acquires a key, edits the grant's record with e, and
// holds the coordinator to docs/safety.md's bound on edits by hand. Every
// backend with records an operator can reach passes it.
// RunCoordinatorTests needs WithEdits or WithoutEdits.
func WithEdits(e Edits) Option {
	return func(o *options) { o.edits = &e }
}

// WithoutEdits runs the suite without the edit checks, for a backend whose
// records nothing outside its process can reach; why says so, and must not
// be empty. RunCoordinatorTests needs WithEdits or WithoutEdits, so that no
// backend leaves the edit checks out by forgetting them.
func WithoutEdits(why string) Option {
	return func(o *options) { o.noEdits = why }
}

// validate reports options the suite cannot run with.
func (o *options) validate() error {
	if err := tenure.ValidateTTL(o.ttl); err != nil {
		return fmt.Errorf("tenuretest.WithTTL: %w", err)
	}
	e := o.edits
	switch {
	case e == nil && strings.TrimSpace(o.noEdits) == "":
		return errors.New("tenuretest: pass WithEdits (how an operator edits this backend's records behind it) or WithoutEdits (why nothing can): the edit checks are never left out unsaid")
	case e != nil && o.noEdits != "":
		return errors.New("tenuretest: WithEdits and WithoutEdits both given")
	case e != nil && (e.Lengthen == nil || e.Shorten == nil || e.Remove == nil):
		return errors.New("tenuretest.WithEdits: Lengthen, Shorten and Remove are all required")
	}
	return nil
}

func newOptions(opts []Option) *options {
	o := &options{
		ttl:         2 * time.Second,
		grace:       2 * time.Second,
		callTimeout: 10 * time.Second,
	}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// RunCoordinatorTests runs the conformance suite against coordinators made by
// newCoordinator, one fresh coordinator per subtest. newCoordinator registers
// its own cleanup (t.Cleanup) to close what it made; it may be called
// concurrently from parallel subtests.
//
// The subtests of Contract run in parallel, each on its own keys:
//
//   - MutualExclusion: another holder's Acquire gets a *tenure.HeldError
//     naming the holder and token, and changes nothing.
//   - Tokens: tokens strictly increase over acquire/release cycles and when
//     the same holder acquires again.
//   - Superseded: a superseded grant can neither be renewed nor released.
//   - Release: Release frees the key at once; releasing a gone grant is nil.
//   - Expiry: a lease expires after its TTL, not before (less 1% for clock
//     rates) and not later than the grace period after; an expired grant is
//     never renewed, even when nobody took the key.
//   - RenewExtends: a grant renewed in time outlives its original TTL; a
//     renewal extends the lease by a full TTL from when it was sent, and
//     the lease expires within the grace period once renewals stop.
//   - Leader: reports the live grant, and ok = false when the key is free.
//   - Watch: current state first, then acquire, release and expiry; the
//     channel closes when its context ends. Skipped unless the coordinator
//     implements tenure.Coordinator.
//   - RenewOne: renewing one grant extends that grant only; the holder's
//     other grant expires on time.
//   - LeaseAge: a grant never reports more lease than it has: another
//     holder never acquires the key before Sent + TTL, also when the lease
//     was started before the Acquire that returned it (granted ahead) and
//     after a renewal.
//   - ConcurrentAcquire: of holders racing for a free key exactly one wins
//     each round; the others are told who.
//   - BadInput: malformed keys, holders and TTLs are rejected with errors
//     matching the right sentinel and naming the input; malformed grants are
//     refused with tenure.ErrInvalidGrant and forged ones reported lost;
//     nothing changes.
//   - CanceledContext: calls with an ended context return its error.
//   - Close: calls after Close (Acquire, Renew, Release, Leader, Watch) fail
//     with errors matching tenure.ErrClosed, and a second Close returns nil.
//
// With WithEdits, Contract also runs the checks of an edit by hand to a
// live grant's record, none of which may make tenure report more lease than
// the grant asked for, or let a second holder in unnoticed (a caller passes
// WithEdits or WithoutEdits; the suite fails at once with neither):
//
//   - EditLengthen: after the record is lengthened to an hour, the grant's
//     Renew either reports it lost (tenure.ErrLost) or reports a TTL no
//     longer than the grant's, twice; a holder let in after it has a greater
//     token, and never before the old grant's renewed lease ends.
//   - EditShorten: after the record is shortened below the TTL, another
//     holder is granted the key (at the latest once the grant's own lease
//     ends) with a greater token; the old grant's next Renew is lost, and
//     neither it nor its Release disturbs the new holder.
//   - EditRemove: the same after the record is deleted.
//
// Restart, with WithRestart only, runs after them.
//
// The suite waits for all its subtests before it returns, so a caller may
// stop a shared server with defer right after it.
func RunCoordinatorTests(t *testing.T, newCoordinator func(t *testing.T) tenure.Coordinator, opts ...Option) {
	t.Helper()
	o := newOptions(opts)
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	t.Run("Contract", func(t *testing.T) {
		for _, ck := range allChecks() {
			if ck.needsRestart || ck.needsEdits && o.edits == nil {
				continue
			}
			t.Run(ck.name, func(t *testing.T) {
				t.Parallel()
				c := newCoordinator(t)
				runCheck(t, ck, c, o, nil)
			})
		}
	})
	if o.restart == nil {
		return
	}
	for _, ck := range allChecks() {
		if !ck.needsRestart {
			continue
		}
		t.Run(ck.name, func(t *testing.T) {
			c := newCoordinator(t)
			runCheck(t, ck, c, o, func() { o.restart(t) })
		})
	}
}

// A check is one property of the contract. It reports through a testing.TB so
// that the suite's own tests can run it against planted bugs and capture the
// failure.
type check struct {
	name         string
	needsRestart bool
	needsEdits   bool // runs only with WithEdits
	run          func(s *state)
}

// state is what a check works with.
type state struct {
	tb      testing.TB
	c       tenure.Coordinator
	o       *options
	restart func()
	prefix  string // unique key prefix for this check
}

// runCheck runs ck against c, reporting to tb.
func runCheck(tb testing.TB, ck check, c tenure.Coordinator, o *options, restart func()) {
	tb.Helper()
	s := &state{tb: tb, c: c, o: o, restart: restart, prefix: uniquePrefix(tb.Name())}
	ck.run(s)
}

// uniquePrefix turns a test name into a valid key prefix with a random
// suffix: "tenuretest/TestX_Contract_Expiry-1a2b3c4d".
func uniquePrefix(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	n := b.String()
	if len(n) > 120 {
		n = n[len(n)-120:]
	}
	return "tenuretest/" + n + "-" + randHex(4)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// key returns a unique key for this check; name distinguishes several keys.
func (s *state) key(name string) string { return s.prefix + "/" + name }

// holder returns a holder identity unique to this run.
func (s *state) holder(name string) string { return name + "-" + randHex(3) }

// ctx returns a context for one call.
func (s *state) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.tb.Context(), s.o.callTimeout)
}

// acquire acquires key for holder and fails the check on error.
func (s *state) acquire(key, holder string) tenure.Grant {
	s.tb.Helper()
	ctx, cancel := s.ctx()
	defer cancel()
	g, err := s.c.Acquire(ctx, key, holder, s.o.ttl)
	if err != nil {
		s.tb.Fatalf("Acquire(%q, %q, %s) error = %v; want nil", key, holder, s.o.ttl, err)
	}
	s.checkGrant(g, key, holder)
	return g
}

// checkGrant checks the fields of a grant returned for key and holder.
func (s *state) checkGrant(g tenure.Grant, key, holder string) {
	s.tb.Helper()
	if g.Key != key || g.Holder != holder {
		s.tb.Fatalf("grant = %v; want key %q holder %q", g, key, holder)
	}
	if g.Token == 0 {
		s.tb.Fatalf("grant %v has token 0; tokens are > 0", g)
	}
	if g.TTL <= 0 {
		s.tb.Fatalf("grant %v has TTL %s; want the positive TTL granted", g, g.TTL)
	}
	if err := g.Validate(); err != nil {
		s.tb.Fatalf("grant %v: Validate() = %v", g, err)
	}
	s.checkSent(g)
}

// checkSent checks that a grant just returned by Acquire or Renew says when
// its lease was last started or extended, and that this was not after the
// reply arrived.
func (s *state) checkSent(g tenure.Grant) {
	s.tb.Helper()
	if g.Sent.IsZero() {
		s.tb.Fatalf("grant %v has no Sent; want when the request that started or extended its lease was sent", g)
	}
	if late := time.Since(g.Sent.Time()); late < 0 {
		s.tb.Fatalf("grant %v has Sent %s after its reply arrived; want the send of its request", g, -late)
	}
}

// acquireHeld expects Acquire by holder to be refused because owner holds key
// with token, and checks the HeldError.
func (s *state) acquireHeld(key, holder string, owner tenure.Grant) {
	s.tb.Helper()
	ctx, cancel := s.ctx()
	defer cancel()
	g, err := s.c.Acquire(ctx, key, holder, s.o.ttl)
	if err == nil {
		s.tb.Fatalf("Acquire(%q, %q) = %v while %v is live; want *tenure.HeldError", key, holder, g, owner)
	}
	checkHeld(s.tb, err, owner)
}

// checkHeld checks that err is a *tenure.HeldError naming owner.
func checkHeld(tb testing.TB, err error, owner tenure.Grant) {
	tb.Helper()
	var he *tenure.HeldError
	if !errors.As(err, &he) {
		tb.Fatalf("Acquire error = %v; want a *tenure.HeldError", err)
	}
	if !errors.Is(err, tenure.ErrHeld) {
		tb.Errorf("Acquire error = %v; want it to match tenure.ErrHeld", err)
	}
	if he.Holder != owner.Holder || he.Token != owner.Token {
		tb.Errorf("HeldError names holder %q token %d; want holder %q token %d", he.Holder, he.Token, owner.Holder, owner.Token)
	}
	if he.Key != "" && he.Key != owner.Key {
		tb.Errorf("HeldError.Key = %q; want %q", he.Key, owner.Key)
	}
}

// leader returns Leader(key) and fails the check on error.
func (s *state) leader(key string) (tenure.Grant, bool) {
	s.tb.Helper()
	ctx, cancel := s.ctx()
	defer cancel()
	g, ok, err := s.c.Leader(ctx, key)
	if err != nil {
		s.tb.Fatalf("Leader(%q) error = %v; want nil", key, err)
	}
	return g, ok
}

// wantLeader checks that Leader(key) reports want.
func (s *state) wantLeader(key string, want tenure.Grant) {
	s.tb.Helper()
	g, ok := s.leader(key)
	if !ok {
		s.tb.Fatalf("Leader(%q) ok = false; want held by %v", key, want)
	}
	if g.Key != want.Key || g.Holder != want.Holder || g.Token != want.Token {
		s.tb.Fatalf("Leader(%q) = %v; want %v", key, g, want)
	}
}

// wantFree checks that Leader(key) reports the key free.
func (s *state) wantFree(key string) {
	s.tb.Helper()
	if g, ok := s.leader(key); ok {
		s.tb.Fatalf("Leader(%q) = %v, ok = true; want the key free", key, g)
	}
}

// renew renews g and fails the check on error.
func (s *state) renew(g tenure.Grant) tenure.Grant {
	s.tb.Helper()
	ctx, cancel := s.ctx()
	defer cancel()
	r, err := s.c.Renew(ctx, g)
	if err != nil {
		s.tb.Fatalf("Renew(%v) error = %v; want nil", g, err)
	}
	if r.Key != g.Key || r.Holder != g.Holder || r.Token != g.Token {
		s.tb.Fatalf("Renew(%v) = %v; want the same key, holder and token", g, r)
	}
	if r.TTL <= 0 {
		s.tb.Fatalf("Renew(%v) TTL = %s; want the positive TTL granted", g, r.TTL)
	}
	s.checkSent(r)
	return r
}

// renewLost checks that renewing g reports it lost.
func (s *state) renewLost(g tenure.Grant) {
	s.tb.Helper()
	ctx, cancel := s.ctx()
	defer cancel()
	r, err := s.c.Renew(ctx, g)
	if err == nil {
		s.tb.Fatalf("Renew(%v) = %v, nil; want an error wrapping tenure.ErrLost", g, r)
	}
	if !errors.Is(err, tenure.ErrLost) {
		s.tb.Fatalf("Renew(%v) error = %v; want it to wrap tenure.ErrLost", g, err)
	}
}

// release releases g and fails the check on error.
func (s *state) release(g tenure.Grant) {
	s.tb.Helper()
	ctx, cancel := s.ctx()
	defer cancel()
	if err := s.c.Release(ctx, g); err != nil {
		s.tb.Fatalf("Release(%v) error = %v; want nil", g, err)
	}
}

// ttlOf is the lease a grant lasts at least: the TTL asked for or the one
// granted, whichever is longer.
func (s *state) ttlOf(g tenure.Grant) time.Duration {
	return max(g.TTL, s.o.ttl)
}

// pollInterval is how often the suite polls while waiting for expiry.
func (s *state) pollInterval() time.Duration {
	return min(max(s.o.ttl/20, 5*time.Millisecond), 100*time.Millisecond)
}

// sleep waits d or until the test's context ends.
func (s *state) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.tb.Context().Done():
		s.tb.Fatalf("test context ended while waiting")
	}
}
