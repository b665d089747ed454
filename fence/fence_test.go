package fence_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
)

func TestStaleErrorMatchesErrStaleToken(t *testing.T) {
	var err error = &fence.StaleError{Presented: 3, Required: 5}
	wrapped := fmt.Errorf("write orders: %w", err)
	if !errors.Is(wrapped, tenure.ErrStaleToken) {
		t.Errorf("errors.Is(%v, tenure.ErrStaleToken) = false; want true", wrapped)
	}
	if !tenure.IsStale(wrapped) {
		t.Errorf("tenure.IsStale(%v) = false; want true", wrapped)
	}
	if errors.Is(err, tenure.ErrNotLeader) {
		t.Errorf("errors.Is(StaleError, ErrNotLeader) = true; want false")
	}
	var se *fence.StaleError
	if !errors.As(wrapped, &se) || se.Presented != 3 || se.Required != 5 {
		t.Errorf("errors.As() = %+v; want Presented 3, Required 5", se)
	}
	if got, want := err.Error(), "fence: stale fencing token 3: 5 or newer required"; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
}

func TestRegisterWrite(t *testing.T) {
	type write struct {
		token uint64
		value string
	}
	tests := []struct {
		name       string
		writes     []write
		wantErrs   []error // per write: nil, tenure.ErrStaleToken or fence.ErrMissingToken
		wantValue  string
		wantToken  uint64
		wantCounts fence.Stats
	}{
		{
			name:       "first write",
			writes:     []write{{1, "a"}},
			wantErrs:   []error{nil},
			wantValue:  "a",
			wantToken:  1,
			wantCounts: fence.Stats{Accepted: 1},
		},
		{
			name:       "higher token accepted",
			writes:     []write{{1, "a"}, {5, "b"}},
			wantErrs:   []error{nil, nil},
			wantValue:  "b",
			wantToken:  5,
			wantCounts: fence.Stats{Accepted: 2},
		},
		{
			name:       "equal token accepted: same term writes again",
			writes:     []write{{5, "a"}, {5, "b"}},
			wantErrs:   []error{nil, nil},
			wantValue:  "b",
			wantToken:  5,
			wantCounts: fence.Stats{Accepted: 2},
		},
		{
			name:       "lower token rejected and changes nothing",
			writes:     []write{{5, "a"}, {4, "stale"}},
			wantErrs:   []error{nil, tenure.ErrStaleToken},
			wantValue:  "a",
			wantToken:  5,
			wantCounts: fence.Stats{Accepted: 1, Rejected: 1},
		},
		{
			name:       "token 0 rejected on an empty register",
			writes:     []write{{0, "zero"}},
			wantErrs:   []error{fence.ErrMissingToken},
			wantValue:  "",
			wantToken:  0,
			wantCounts: fence.Stats{Rejected: 1},
		},
		{
			name:       "token 0 rejected after writes",
			writes:     []write{{2, "a"}, {0, "zero"}, {3, "b"}},
			wantErrs:   []error{nil, fence.ErrMissingToken, nil},
			wantValue:  "b",
			wantToken:  3,
			wantCounts: fence.Stats{Accepted: 2, Rejected: 1},
		},
		{
			name:       "max token",
			writes:     []write{{1<<64 - 1, "max"}, {1<<64 - 2, "below"}},
			wantErrs:   []error{nil, tenure.ErrStaleToken},
			wantValue:  "max",
			wantToken:  1<<64 - 1,
			wantCounts: fence.Stats{Accepted: 1, Rejected: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := fence.NewRegister[string]()
			for i, w := range tc.writes {
				err := r.Write(w.token, w.value)
				if want := tc.wantErrs[i]; want == nil && err != nil {
					t.Errorf("Write(%d, %q) = %v; want nil", w.token, w.value, err)
				} else if want != nil && !errors.Is(err, want) {
					t.Errorf("Write(%d, %q) = %v; want an error matching %v", w.token, w.value, err, want)
				}
			}
			v, tok := r.Read()
			if v != tc.wantValue || tok != tc.wantToken {
				t.Errorf("Read() = %q, %d; want %q, %d", v, tok, tc.wantValue, tc.wantToken)
			}
			if r.Value() != tc.wantValue || r.Token() != tc.wantToken {
				t.Errorf("Value(), Token() = %q, %d; want %q, %d", r.Value(), r.Token(), tc.wantValue, tc.wantToken)
			}
			if got := r.Stats(); got != tc.wantCounts {
				t.Errorf("Stats() = %+v; want %+v", got, tc.wantCounts)
			}
		})
	}
}

func TestRegisterStaleErrorDetails(t *testing.T) {
	r := fence.NewRegister[int]()
	if err := r.Write(9, 90); err != nil {
		t.Fatalf("Write(9) = %v", err)
	}
	err := r.Write(7, 70)
	var se *fence.StaleError
	if !errors.As(err, &se) {
		t.Fatalf("Write(7) = %v; want a *StaleError", err)
	}
	if se.Presented != 7 || se.Required != 9 {
		t.Errorf("StaleError = %+v; want Presented 7, Required 9", *se)
	}
}

func TestZeroValues(t *testing.T) {
	var f fence.Fence
	if err := f.Admit(3); err != nil {
		t.Errorf("zero Fence: Admit(3) = %v; want nil", err)
	}
	if err := f.Admit(2); !errors.Is(err, tenure.ErrStaleToken) {
		t.Errorf("zero Fence: Admit(2) after 3 = %v; want stale", err)
	}
	var r fence.Register[[]byte]
	if err := r.Write(1, []byte("x")); err != nil || string(r.Value()) != "x" {
		t.Errorf("zero Register: Write(1) = %v, Value() = %q; want nil, %q", err, r.Value(), "x")
	}
}

// TestRegisterConcurrentWriters runs many writers with shuffled tokens and
// checks the history the observer recorded: accepted tokens never decrease
// in decision order, every rejection was of a token below the highest, and
// the final state is the highest token's value.
func TestRegisterConcurrentWriters(t *testing.T) {
	const writers, perWriter = 8, 200
	var (
		mu     sync.Mutex
		events []fence.Event
	)
	r := fence.NewRegister[uint64](fence.WithObserver(func(e fence.Event) {
		mu.Lock() // the register's lock is held too; this lock only guards events
		events = append(events, e)
		mu.Unlock()
	}))

	var wg sync.WaitGroup
	const maxToken = writers * perWriter
	for w := range writers {
		tokens := make([]uint64, perWriter)
		for i := range tokens {
			tokens[i] = uint64(w*perWriter + i + 1)
		}
		rand.Shuffle(len(tokens), func(i, j int) { tokens[i], tokens[j] = tokens[j], tokens[i] })
		wg.Go(func() {
			for _, tok := range tokens {
				err := r.Write(tok, tok*10)
				if err != nil && !errors.Is(err, tenure.ErrStaleToken) {
					t.Errorf("Write(%d) = %v; want nil or stale", tok, err)
				}
			}
		})
	}
	wg.Wait()

	if v, tok := r.Read(); tok != maxToken || v != maxToken*10 {
		t.Errorf("Read() = %d, %d; want %d, %d", v, tok, maxToken*10, maxToken)
	}
	st := r.Stats()
	if st.Accepted+st.Rejected != writers*perWriter {
		t.Errorf("Stats() = %+v; want Accepted+Rejected = %d", st, writers*perWriter)
	}
	if len(events) != writers*perWriter {
		t.Fatalf("observer saw %d events; want %d", len(events), writers*perWriter)
	}
	var highest uint64
	var accepted uint64
	for i, e := range events {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has Seq %d; want %d", i, e.Seq, i+1)
		}
		if e.Accepted {
			accepted++
			if e.Token < highest {
				t.Fatalf("event %d accepted token %d after %d had been accepted", i, e.Token, highest)
			}
			highest = e.Token
			if e.Value != e.Token*10 {
				t.Errorf("event %d Value = %v; want %d", i, e.Value, e.Token*10)
			}
		} else {
			if e.Token >= highest {
				t.Fatalf("event %d rejected token %d, not below the highest %d", i, e.Token, highest)
			}
			var se *fence.StaleError
			if !errors.As(e.Err, &se) || se.Required != highest {
				t.Errorf("event %d Err = %v; want a *StaleError requiring %d", i, e.Err, highest)
			}
		}
		if e.Highest != highest {
			t.Errorf("event %d Highest = %d; want %d", i, e.Highest, highest)
		}
	}
	if accepted != st.Accepted {
		t.Errorf("observer saw %d acceptances; Stats().Accepted = %d", accepted, st.Accepted)
	}
}

func TestFenceAdmit(t *testing.T) {
	f := fence.New()
	steps := []struct {
		token uint64
		want  error
	}{
		{0, fence.ErrMissingToken},
		{4, nil},
		{4, nil},
		{3, tenure.ErrStaleToken},
		{8, nil},
		{5, tenure.ErrStaleToken},
		{0, fence.ErrMissingToken},
	}
	for _, s := range steps {
		err := f.Admit(s.token)
		if (s.want == nil) != (err == nil) || (s.want != nil && !errors.Is(err, s.want)) {
			t.Errorf("Admit(%d) = %v; want %v", s.token, err, s.want)
		}
	}
	if f.Token() != 8 {
		t.Errorf("Token() = %d; want 8", f.Token())
	}
	if got, want := f.Stats(), (fence.Stats{Accepted: 3, Rejected: 4}); got != want {
		t.Errorf("Stats() = %+v; want %+v", got, want)
	}
}

// TestFenceEnterWaitsForOlderHolders: a newer token's holder does not enter
// while an older token's holder is inside; same-token holders do not wait.
func TestFenceEnterWaitsForOlderHolders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := fence.New()
		ctx := t.Context()
		release1, err := f.Enter(ctx, 1)
		if err != nil {
			t.Fatalf("Enter(1) = %v", err)
		}
		release1b, err := f.Enter(ctx, 1)
		if err != nil {
			t.Fatalf("second Enter(1) = %v; same token must not wait", err)
		}

		entered2 := make(chan func())
		go func() {
			rel, err := f.Enter(ctx, 2)
			if err != nil {
				t.Errorf("Enter(2) = %v", err)
				close(entered2)
				return
			}
			entered2 <- rel
		}()
		synctest.Wait()
		select {
		case <-entered2:
			t.Fatal("Enter(2) returned while token 1 holders are inside")
		default:
		}
		// Token 2 is recorded already: token 1 is refused from now on.
		if f.Token() != 2 {
			t.Errorf("Token() while 2 waits = %d; want 2", f.Token())
		}
		if _, err := f.Enter(ctx, 1); !errors.Is(err, tenure.ErrStaleToken) {
			t.Errorf("Enter(1) after 2 arrived = %v; want stale", err)
		}
		if err := f.Admit(1); !errors.Is(err, tenure.ErrStaleToken) {
			t.Errorf("Admit(1) after 2 arrived = %v; want stale", err)
		}

		release1()
		release1() // idempotent: must not let 2 in while 1b is still inside
		synctest.Wait()
		select {
		case <-entered2:
			t.Fatal("Enter(2) returned while a token 1 holder is still inside")
		default:
		}
		release1b()
		rel2 := <-entered2
		if rel2 == nil {
			t.Fatal("Enter(2) failed")
		}
		rel2()
	})
}

// TestFenceEnterSuperseded: a holder that waits is refused when a newer
// token arrives meanwhile; the newest enters once the old holder leaves.
func TestFenceEnterSuperseded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []fence.Event
		f := fence.New(fence.WithObserver(func(e fence.Event) { events = append(events, e) }))
		ctx := t.Context()
		release1, err := f.Enter(ctx, 1)
		if err != nil {
			t.Fatalf("Enter(1) = %v", err)
		}
		errs := make(chan error, 2)
		for _, tok := range []uint64{2, 3} {
			go func() {
				rel, err := f.Enter(ctx, tok)
				if err == nil {
					rel()
				}
				errs <- err
			}()
			synctest.Wait() // 2 arrives strictly before 3
		}
		release1()
		var stale, ok int
		for range 2 {
			err := <-errs
			var se *fence.StaleError
			switch {
			case err == nil:
				ok++
			case errors.As(err, &se) && se.Presented == 2 && se.Required == 3:
				stale++
			default:
				t.Errorf("Enter() = %v; want nil for 3, stale 2<3 for 2", err)
			}
		}
		if ok != 1 || stale != 1 {
			t.Errorf("got %d admitted, %d stale; want 1, 1", ok, stale)
		}
		// 1, 2, 3 admitted on arrival; then 2 rejected after waiting.
		if got, want := f.Stats(), (fence.Stats{Accepted: 3, Rejected: 1}); got != want {
			t.Errorf("Stats() = %+v; want %+v", got, want)
		}
		if n := len(events); n != 4 || events[3].Accepted || events[3].Token != 2 {
			t.Errorf("events = %+v; want the 4th to reject token 2", events)
		}
	})
}

func TestFenceEnterContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := fence.New()
		release1, err := f.Enter(t.Context(), 1)
		if err != nil {
			t.Fatalf("Enter(1) = %v", err)
		}
		defer release1()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() {
			_, err := f.Enter(ctx, 2)
			done <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Enter(2) with a cancelled context = %v; want context.Canceled", err)
		}
		if f.Token() != 2 {
			t.Errorf("Token() = %d; want 2: the token is recorded on arrival", f.Token())
		}
	})
}

func TestFenceEnterRejects(t *testing.T) {
	f := fence.New()
	if _, err := f.Enter(t.Context(), 0); !errors.Is(err, fence.ErrMissingToken) {
		t.Errorf("Enter(0) = %v; want ErrMissingToken", err)
	}
	if err := f.Admit(5); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Enter(t.Context(), 4); !errors.Is(err, tenure.ErrStaleToken) {
		t.Errorf("Enter(4) after 5 = %v; want stale", err)
	}
}
