package tenuretest_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/tenuretest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// toyOpts are short leases: the toy grants any TTL, and runs on real time.
func toyOpts() []tenuretest.Option {
	return []tenuretest.Option{
		tenuretest.WithTTL(400 * time.Millisecond),
		tenuretest.WithGrace(time.Second),
		tenuretest.WithCallTimeout(2 * time.Second),
	}
}

// recorder is a testing.TB that records failures instead of reporting them,
// so that a test can assert that a check fails. Fatal and Skip end the
// check's goroutine, as they do in package testing; everything else (Name,
// Context, Cleanup, Log) goes to the real test.
type recorder struct {
	testing.TB

	mu      sync.Mutex
	failed  bool
	skipped bool
	msgs    []string
}

func (r *recorder) record(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	r.msgs = append(r.msgs, msg)
}

func (r *recorder) Fail() { r.record("Fail called") }
func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}
func (r *recorder) FailNow()                          { r.Fail(); runtime.Goexit() }
func (r *recorder) Error(args ...any)                 { r.record(fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) { r.record(fmt.Sprintf(format, args...)) }
func (r *recorder) Fatal(args ...any)                 { r.record(fmt.Sprint(args...)); runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) {
	r.record(fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (r *recorder) SkipNow() {
	r.mu.Lock()
	r.skipped = true
	r.mu.Unlock()
	runtime.Goexit()
}
func (r *recorder) Skip(args ...any)                 { r.SkipNow() }
func (r *recorder) Skipf(format string, args ...any) { r.SkipNow() }
func (r *recorder) Skipped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped
}

func (r *recorder) report() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.msgs, "\n")
}

// runCheck runs the named check of the suite against c and returns what it
// reported.
func runCheck(t *testing.T, name string, c tenure.Coordinator, restart func(), opts ...tenuretest.Option) *recorder {
	t.Helper()
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tenuretest.RunCheck(r, name, c, restart, append(toyOpts(), opts...)...)
	}()
	<-done
	return r
}

func newToyFor(t *testing.T, b bugs) *toy {
	c := newToy(b)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A correct coordinator passes every check: the checks do not fail for
// nothing, so their failures below are the planted bugs'.
func TestChecksPassCorrectCoordinator(t *testing.T) {
	names := tenuretest.CheckNames()
	if len(names) < 12 {
		t.Fatalf("CheckNames() = %v; want at least 12 checks", names)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newToyFor(t, bugs{})
			r := runCheck(t, name, c, c.Restart, tenuretest.WithEdits(c.edits()))
			if r.Failed() || r.Skipped() {
				t.Errorf("check %s against a correct coordinator: failed = %v, skipped = %v:\n%s", name, r.Failed(), r.Skipped(), r.report())
			}
		})
	}
}

// Every planted bug is caught by the check aimed at it, for the right
// reason.
func TestChecksCatchPlantedBugs(t *testing.T) {
	cases := []struct {
		name  string
		bugs  bugs
		check string
		want  string // in the report
		opts  []tenuretest.Option
	}{
		{"tokens reused after release", bugs{reuseTokens: true}, "Tokens", "want > ", nil},
		{"tokens reused after release (Release)", bugs{reuseTokens: true}, "Release", "want > ", nil},
		{"expired grant revived", bugs{reviveExpired: true}, "Expiry", "tenure.ErrLost", nil},
		{"no mutual exclusion", bugs{noExclusion: true}, "MutualExclusion", "want *tenure.HeldError", nil},
		{"no mutual exclusion under contention", bugs{noExclusion: true}, "ConcurrentAcquire", "want exactly 1", nil},
		{"HeldError with wrong token", bugs{heldWrongToken: true}, "MutualExclusion", "HeldError names holder", nil},
		{"HeldError with wrong token under contention", bugs{heldWrongToken: true}, "ConcurrentAcquire", "want the winner", nil},
		{"lease expires early", bugs{earlyExpiry: true}, "Expiry", "must last", nil},
		{"lease expires early (Watch)", bugs{earlyExpiry: true}, "Watch", "must last", nil},
		{"lease expires late", bugs{lateExpiry: true}, "Expiry", "still held", nil},
		{"renew does not extend", bugs{renewNoop: true}, "RenewExtends", "grant lost; want nil", nil},
		{"renew extends by less than the TTL", bugs{renewShort: true}, "RenewExtends", "must last", nil},
		{"renew of a forged grant not reported lost", bugs{renewLostAsOther: true}, "BadInput", "tenure: grant lost", nil},
		{"only Acquire and Leader refused after Close", bugs{closeOnlyAcquire: true}, "Close", "Renew after Close", nil},
		{"superseded grant renewable", bugs{renewSuperseded: true}, "Superseded", "tenure.ErrLost", nil},
		{"release by a stranger", bugs{releaseAny: true}, "BadInput", "Leader(", nil},
		{"release of a superseded grant", bugs{releaseAny: true}, "Superseded", "Leader(", nil},
		{"release does nothing", bugs{releaseNoop: true}, "Release", "want the key free", nil},
		{"bad input accepted", bugs{noValidation: true}, "BadInput", "want an error wrapping tenure: invalid key", nil},
		{"Leader reports expired lease", bugs{leaderStale: true}, "Expiry", "want it free", nil},
		{"Watch misses expiry", bugs{watchNoExpiry: true}, "Watch", "waiting for key free", nil},
		{"Watch never closes", bugs{watchNoClose: true}, "Watch", "not closed", nil},
		{"renewing one grant extends the holder's others", bugs{sharedRenew: true}, "RenewOne", "kept it alive", nil},
		// The bug shows only while another holder acquires between the
		// lease's real end and the end its Sent promises: about 0.57 TTL,
		// long enough at 2s for a poll on a loaded machine.
		{"a lease started ahead reported as new", bugs{leaseAhead: true}, "LeaseAge", "promises more lease", []tenuretest.Option{tenuretest.WithTTL(2 * time.Second)}},
		{"grants without Sent", bugs{noSent: true}, "Release", "has no Sent", nil},
		{"ended context ignored", bugs{ignoreContext: true}, "CanceledContext", "context.Canceled", nil},
		{"usable after Close", bugs{usableAfterClose: true}, "Close", "tenure.ErrClosed", nil},
		{"tokens forgotten on restart", bugs{forgetOnRestart: true}, "Restart", "before the restart", nil},
		{"Renew reports the record's TTL after it was lengthened", bugs{renewRecordTTL: true}, "EditLengthen", "must not lengthen what the holder is told", nil},
		{"Renew writes back a shortened record another holder took", bugs{rewriteEdited: true}, "EditShorten", "two holders act at once", nil},
		{"Renew writes back a removed record another holder took", bugs{rewriteEdited: true}, "EditRemove", "two holders act at once", nil},
		{"the token sequence removed with the record", bugs{removeTokens: true}, "EditRemove", "want > ", nil},
		{"the token sequence removed with a record a lengthen ended", bugs{lengthenRemoves: true, removeTokens: true}, "EditLengthen", "want > ", nil},
		{"Renew succeeds but leaves a lengthened record ended", bugs{renewEndsEdited: true}, "EditLengthen", "two holders of the key at once", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newToyFor(t, tc.bugs)
			r := runCheck(t, tc.check, c, c.Restart, append([]tenuretest.Option{tenuretest.WithEdits(c.edits())}, tc.opts...)...)
			if !r.Failed() {
				t.Fatalf("check %s passed a coordinator whose %s; want it to fail", tc.check, tc.name)
			}
			if got := r.report(); !strings.Contains(got, tc.want) {
				t.Errorf("check %s failed with:\n%s\nwant a report mentioning %q", tc.check, got, tc.want)
			}
		})
	}
}

// EditLengthen passes a coordinator on which a lengthen ends the grant, as
// a revocation does on etcd: its renewal is told lost, and the next holder
// gets a greater token.
func TestEditLengthenThatEndsTheGrant(t *testing.T) {
	c := newToyFor(t, bugs{lengthenRemoves: true})
	r := runCheck(t, "EditLengthen", c, c.Restart, tenuretest.WithEdits(c.edits()))
	if r.Failed() || r.Skipped() {
		t.Errorf("EditLengthen against a correct coordinator whose lengthen ends the grant: failed = %v, skipped = %v:\n%s", r.Failed(), r.Skipped(), r.report())
	}
}

// RunCoordinatorTests itself runs every check as a subtest, the restart
// check only when a restart hook is given.
func TestRunCoordinatorTests(t *testing.T) {
	var restarted sync.Map // *testing.T → *toy
	tenuretest.RunCoordinatorTests(t, func(t *testing.T) tenure.Coordinator {
		c := newToyFor(t, bugs{})
		restarted.Store(t, c)
		return c
	}, append(toyOpts(), tenuretest.WithRestart(func(t *testing.T) {
		c, ok := restarted.Load(t)
		if !ok {
			t.Fatal("restart hook called with a test that made no coordinator")
		}
		c.(*toy).Restart()
	}), tenuretest.WithEdits(tenuretest.Edits{
		Lengthen: func(tb testing.TB, g tenure.Grant, d time.Duration) { toyOf(tb, &restarted).edits().Lengthen(tb, g, d) },
		Shorten:  func(tb testing.TB, g tenure.Grant, d time.Duration) { toyOf(tb, &restarted).edits().Shorten(tb, g, d) },
		Remove:   func(tb testing.TB, g tenure.Grant) { toyOf(tb, &restarted).edits().Remove(tb, g) },
	}))...)
	made := 0
	restarted.Range(func(_, _ any) bool { made++; return true })
	if want := len(tenuretest.CheckNames()); made != want {
		t.Errorf("RunCoordinatorTests made %d coordinators; want one per check (%d)", made, want)
	}
}

// toyOf is the toy the factory made for tb.
func toyOf(tb testing.TB, made *sync.Map) *toy {
	tb.Helper()
	c, ok := made.Load(tb)
	if !ok {
		tb.Fatal("edit hook called with a test that made no coordinator")
	}
	return c.(*toy)
}

// TestEditsNeverLeftOutUnsaid: RunCoordinatorTests refuses options with
// neither WithEdits nor WithoutEdits, with both, with an empty reason, or
// with an edit missing.
func TestEditsNeverLeftOutUnsaid(t *testing.T) {
	all := tenuretest.Edits{
		Lengthen: func(testing.TB, tenure.Grant, time.Duration) {},
		Shorten:  func(testing.TB, tenure.Grant, time.Duration) {},
		Remove:   func(testing.TB, tenure.Grant) {},
	}
	noRemove := all
	noRemove.Remove = nil
	for _, tc := range []struct {
		name string
		opts []tenuretest.Option
		want string // "" for none
	}{
		{"neither", nil, "pass WithEdits"},
		{"empty reason", []tenuretest.Option{tenuretest.WithoutEdits(" ")}, "pass WithEdits"},
		{"both", []tenuretest.Option{tenuretest.WithEdits(all), tenuretest.WithoutEdits("x")}, "both given"},
		{"an edit missing", []tenuretest.Option{tenuretest.WithEdits(noRemove)}, "all required"},
		{"edits", []tenuretest.Option{tenuretest.WithEdits(all)}, ""},
		{"without, said why", []tenuretest.Option{tenuretest.WithoutEdits("in-process records")}, ""},
	} {
		err := tenuretest.ValidateOptions(tc.opts...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: RunCoordinatorTests' options refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: RunCoordinatorTests' options = %v; want refused with %q", tc.name, err, tc.want)
		}
	}
}
