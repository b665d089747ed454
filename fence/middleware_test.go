package fence_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/tenure-dev/tenure/fence"
)

func TestParseToken(t *testing.T) {
	tests := []struct {
		in   string
		want uint64 // 0: malformed
	}{
		{"1", 1},
		{"42", 42},
		{"007", 7},
		{"18446744073709551615", 1<<64 - 1},
		{"", 0},
		{"0", 0},
		{"00", 0},
		{"abc", 0},
		{"-1", 0},
		{"+1", 0},
		{"1.5", 0},
		{"1e3", 0},
		{"0x10", 0},
		{" 1", 0},
		{"1 ", 0},
		{"1,2", 0},
		{"1_000", 0},
		{"18446744073709551616", 0},
		{"99999999999999999999999999", 0},
		{"１", 0}, // fullwidth digit one
	}
	for _, tc := range tests {
		got, err := fence.ParseToken(tc.in)
		if tc.want == 0 {
			if !errors.Is(err, fence.ErrMalformedToken) {
				t.Errorf("ParseToken(%q) = %d, %v; want an error matching ErrMalformedToken", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseToken(%q) = %d, %v; want %d, nil", tc.in, got, err, tc.want)
		}
	}
}

func TestParseTokenQuotesLongInputShort(t *testing.T) {
	long := strings.Repeat("x", 10000)
	_, err := fence.ParseToken(long)
	if err == nil || len(err.Error()) > 200 {
		t.Errorf("ParseToken(10000 bytes) error is %d bytes long; want an error under 200 bytes", len(err.Error()))
	}
}

// problemBody decodes a problem body into a map, so that absent members can
// be told from zero ones.
func problemBody(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("response body %q is not JSON: %v", rec.Body.String(), err)
	}
	return m
}

func TestMiddlewareStatus(t *testing.T) {
	const highest = 10
	tests := []struct {
		name       string
		values     []string // Fencing-Token header values; nil: no header
		wantStatus int
		wantType   string
		wantToken  uint64 // for 200: the token the handler sees
		presented  float64
	}{
		{name: "equal token", values: []string{"10"}, wantStatus: 200, wantToken: 10},
		{name: "newer token", values: []string{"11"}, wantStatus: 200, wantToken: 11},
		{name: "max token", values: []string{"18446744073709551615"}, wantStatus: 200, wantToken: 1<<64 - 1},
		{name: "leading zeros", values: []string{"0011"}, wantStatus: 200, wantToken: 11},
		{name: "missing", values: nil, wantStatus: 428, wantType: fence.ProblemMissingToken},
		{name: "empty", values: []string{""}, wantStatus: 400, wantType: fence.ProblemMalformedToken},
		{name: "letters", values: []string{"abc"}, wantStatus: 400, wantType: fence.ProblemMalformedToken},
		{name: "negative", values: []string{"-1"}, wantStatus: 400, wantType: fence.ProblemMalformedToken},
		{name: "zero", values: []string{"0"}, wantStatus: 400, wantType: fence.ProblemMalformedToken},
		{name: "fraction", values: []string{"1.5"}, wantStatus: 400, wantType: fence.ProblemMalformedToken},
		{name: "overflow", values: []string{"18446744073709551616"}, wantStatus: 400, wantType: fence.ProblemMalformedToken},
		{name: "list in one header", values: []string{"11, 12"}, wantStatus: 400, wantType: fence.ProblemMalformedToken},
		{name: "two headers", values: []string{"11", "12"}, wantStatus: 400, wantType: fence.ProblemMalformedToken},
		{name: "stale", values: []string{"9"}, wantStatus: 409, wantType: fence.ProblemStaleToken, presented: 9},
		{name: "stale 1", values: []string{"1"}, wantStatus: 409, wantType: fence.ProblemStaleToken, presented: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fence.New()
			if err := f.Admit(highest); err != nil {
				t.Fatal(err)
			}
			var called atomic.Int32
			var seen uint64
			h := fence.Middleware(f, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				called.Add(1)
				tok, ok := fence.TokenFromContext(r.Context())
				if !ok {
					t.Error("TokenFromContext() ok = false in an admitted request")
				}
				seen = tok
				w.WriteHeader(http.StatusOK)
			}))
			req := httptest.NewRequest(http.MethodPut, "/orders/1", nil)
			for _, v := range tc.values {
				req.Header.Add(fence.Header, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			if rec.Code != tc.wantStatus {
				t.Fatalf("status = %d; want %d (body %s)", rec.Code, tc.wantStatus, rec.Body)
			}
			if tc.wantStatus == 200 {
				if called.Load() != 1 || seen != tc.wantToken {
					t.Errorf("handler called %d times with token %d; want once with %d", called.Load(), seen, tc.wantToken)
				}
				if f.Token() != max(highest, tc.wantToken) {
					t.Errorf("fence Token() = %d; want %d", f.Token(), max(highest, tc.wantToken))
				}
				return
			}
			if called.Load() != 0 {
				t.Errorf("handler called for a rejected request")
			}
			if f.Token() != highest {
				t.Errorf("fence Token() after a rejection = %d; want %d unchanged", f.Token(), highest)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q; want application/problem+json", ct)
			}
			p := problemBody(t, rec)
			if p["type"] != tc.wantType {
				t.Errorf("type = %v; want %s", p["type"], tc.wantType)
			}
			if p["status"] != float64(tc.wantStatus) {
				t.Errorf("status member = %v; want %d", p["status"], tc.wantStatus)
			}
			if s, _ := p["title"].(string); s == "" {
				t.Errorf("title = %v; want a non-empty string", p["title"])
			}
			if s, _ := p["detail"].(string); !strings.HasPrefix(s, "fence: ") {
				t.Errorf("detail = %v; want a fence error message", p["detail"])
			}
			if tc.wantStatus == 409 {
				if p["presented"] != tc.presented || p["required"] != float64(highest) {
					t.Errorf("presented, required = %v, %v; want %v, %d", p["presented"], p["required"], tc.presented, highest)
				}
			} else if _, ok := p["presented"]; ok {
				t.Errorf("presented member in a %d problem: %v", tc.wantStatus, p)
			}
		})
	}
}

func TestTokenFromContextOutsideMiddleware(t *testing.T) {
	if tok, ok := fence.TokenFromContext(t.Context()); ok || tok != 0 {
		t.Errorf("TokenFromContext(plain context) = %d, %v; want 0, false", tok, ok)
	}
}

func TestMiddlewarePanicsOnNil(t *testing.T) {
	for name, fn := range map[string]func(){
		"nil fence":   func() { fence.Middleware(nil, http.NotFoundHandler()) },
		"nil handler": func() { fence.Middleware(fence.New(), nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Middleware did not panic")
				}
			}()
			fn()
		})
	}
}

func TestWriteErrorDoesNotDiscloseInternalErrors(t *testing.T) {
	rec := httptest.NewRecorder()
	fence.WriteError(rec, errors.New("db password is hunter2"))
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "hunter2") {
		t.Errorf("WriteError(internal) = %d %s; want 500 without the error text", rec.Code, rec.Body)
	}
}

// blockingHandler lets a test hold requests inside the handler: each request
// records its token in started and blocks until its token's gate is closed.
type blockingHandler struct {
	started chan uint64
	gates   map[uint64]chan struct{}
}

func (h *blockingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, _ := fence.TokenFromContext(r.Context())
	h.started <- tok
	if g := h.gates[tok]; g != nil {
		<-g
	}
	w.WriteHeader(http.StatusNoContent)
}

// serve runs one request with token in a goroutine and returns its recorder,
// ready to read once done is closed.
func serve(h http.Handler, token string) (rec *httptest.ResponseRecorder, done chan struct{}) {
	rec, done = httptest.NewRecorder(), make(chan struct{})
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	req.Header.Set(fence.Header, token)
	go func() {
		defer close(done)
		h.ServeHTTP(rec, req)
	}()
	return rec, done
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestMiddlewareDefaultWaitsForOlderHandlers: request A (token 1) is
// admitted and its handler is slow; request B (token 2) arrives. By default
// B's handler must not start until A's has returned, or A could overwrite
// B's write afterwards.
func TestMiddlewareDefaultWaitsForOlderHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &blockingHandler{started: make(chan uint64, 4), gates: map[uint64]chan struct{}{1: make(chan struct{})}}
		mw := fence.Middleware(fence.New(), h)
		_, done1 := serve(mw, "1")
		synctest.Wait()
		<-h.started
		rec2, done2 := serve(mw, "2")
		synctest.Wait()
		if isClosed(done2) || len(h.started) != 0 {
			t.Fatal("token 2's handler ran while token 1's was still running; the default must wait for it")
		}
		close(h.gates[1])
		<-done1
		<-done2
		if got := <-h.started; got != 2 || rec2.Code != http.StatusNoContent {
			t.Fatalf("after token 1's handler returned: started %d, status %d; want token 2, 204", got, rec2.Code)
		}
	})
}

// TestMiddlewareUnorderedOverlaps documents the opt-out: with Unordered an
// older token's handler that was admitted first may still run while a newer
// one's does.
func TestMiddlewareUnorderedOverlaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &blockingHandler{started: make(chan uint64, 4), gates: map[uint64]chan struct{}{1: make(chan struct{})}}
		mw := fence.Middleware(fence.New(), h, fence.Unordered())
		_, done1 := serve(mw, "1")
		synctest.Wait()
		rec2, done2 := serve(mw, "2")
		synctest.Wait()
		if !isClosed(done2) || rec2.Code != http.StatusNoContent {
			t.Errorf("token 2 did not complete while token 1 was in its handler; Unordered must not wait")
		}
		close(h.gates[1])
		<-done1
	})
}

func TestMiddlewareDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &blockingHandler{started: make(chan uint64, 8), gates: map[uint64]chan struct{}{
			1: make(chan struct{}),
			2: make(chan struct{}),
		}}
		mw := fence.Middleware(fence.New(), h, fence.Drain())

		rec1a, done1a := serve(mw, "1")
		rec1b, done1b := serve(mw, "1")
		synctest.Wait()
		if len(h.started) != 2 {
			t.Fatalf("%d handlers started for two token 1 requests; want 2: same token must not wait", len(h.started))
		}
		<-h.started
		<-h.started

		rec2, done2 := serve(mw, "2")
		synctest.Wait()
		if len(h.started) != 0 || isClosed(done2) {
			t.Fatal("token 2's handler started while token 1's were running")
		}
		// A late token 1 request is refused at once; it never reaches the handler.
		rec1c, done1c := serve(mw, "1")
		synctest.Wait()
		if !isClosed(done1c) || rec1c.Code != http.StatusConflict {
			t.Errorf("late token 1 request: done %v, status %d; want 409 at once", isClosed(done1c), rec1c.Code)
		}

		close(h.gates[1])
		synctest.Wait()
		if got := <-h.started; got != 2 {
			t.Errorf("handler started with token %d; want 2", got)
		}
		close(h.gates[2])
		<-done1a
		<-done1b
		<-done2
		for name, rec := range map[string]*httptest.ResponseRecorder{"1a": rec1a, "1b": rec1b, "2": rec2} {
			if rec.Code != http.StatusNoContent {
				t.Errorf("request %s status = %d; want 204", name, rec.Code)
			}
		}
	})
}

func TestMiddlewareDrainRequestEndsWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &blockingHandler{started: make(chan uint64, 4), gates: map[uint64]chan struct{}{1: make(chan struct{})}}
		mw := fence.Middleware(fence.New(), h, fence.Drain())
		_, done1 := serve(mw, "1")
		synctest.Wait()

		ctx, cancel := context.WithCancel(t.Context())
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", nil)
		req.Header.Set(fence.Header, "2")
		rec := httptest.NewRecorder()
		done2 := make(chan struct{})
		go func() { defer close(done2); mw.ServeHTTP(rec, req) }()
		synctest.Wait()
		cancel()
		<-done2
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("status of a request cancelled while waiting = %d; want 503", rec.Code)
		}
		if len(h.started) != 1 {
			t.Errorf("%d handlers started; want only token 1's", len(h.started))
		}
		close(h.gates[1])
		<-done1
	})
}

func TestMiddlewareSerialize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &blockingHandler{started: make(chan uint64, 8), gates: map[uint64]chan struct{}{
			3: make(chan struct{}),
		}}
		mw := fence.Middleware(fence.New(), h, fence.Serialize())
		_, doneA := serve(mw, "3")
		synctest.Wait()
		recB, doneB := serve(mw, "3")
		synctest.Wait()
		if len(h.started) != 1 || isClosed(doneB) {
			t.Fatalf("%d handlers started; want 1: Serialize runs one at a time", len(h.started))
		}
		close(h.gates[3])
		<-doneA
		<-doneB
		if recB.Code != http.StatusNoContent {
			t.Errorf("second token 3 request status = %d; want 204", recB.Code)
		}
	})
}

// TestMiddlewareOrdering hammers a middleware with concurrent requests of
// random tokens and checks, for each mode, what it promises about handlers:
// Drain: handlers running at one time share one token, and the tokens of
// handlers, in the order they start, never decrease; Serialize: the same,
// with one handler at a time.
func TestMiddlewareOrdering(t *testing.T) {
	for _, mode := range []struct {
		name       string
		opt        fence.MiddlewareOption
		maxRunning int
	}{
		{"drain", fence.Drain(), 0},
		{"serialize", fence.Serialize(), 1},
	} {
		t.Run(mode.name, func(t *testing.T) {
			var (
				mu      sync.Mutex
				running = map[uint64]int{}
				nrun    int
				last    uint64
			)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tok, _ := fence.TokenFromContext(r.Context())
				mu.Lock()
				if tok < last {
					t.Errorf("handler for token %d started after one for token %d", tok, last)
				}
				last = tok
				running[tok]++
				nrun++
				if len(running) > 1 {
					t.Errorf("handlers of %d tokens running at once: %v", len(running), running)
				}
				if mode.maxRunning > 0 && nrun > mode.maxRunning {
					t.Errorf("%d handlers running at once; want at most %d", nrun, mode.maxRunning)
				}
				mu.Unlock()
				runtime.Gosched()
				mu.Lock()
				nrun--
				if running[tok]--; running[tok] == 0 {
					delete(running, tok)
				}
				mu.Unlock()
			})
			mw := fence.Middleware(fence.New(), h, mode.opt)
			var wg sync.WaitGroup
			var admitted, stale atomic.Int64
			for g := range 8 {
				wg.Go(func() {
					for i := range 300 {
						tok := uint64(i/3 + g%2) // tokens rise slowly; neighbours race
						req := httptest.NewRequest(http.MethodPost, "/", nil)
						req.Header.Set(fence.Header, strconv.FormatUint(tok+1, 10))
						rec := httptest.NewRecorder()
						mw.ServeHTTP(rec, req)
						switch rec.Code {
						case http.StatusOK:
							admitted.Add(1)
						case http.StatusConflict:
							stale.Add(1)
						default:
							t.Errorf("status %d; want 200 or 409", rec.Code)
						}
					}
				})
			}
			wg.Wait()
			if admitted.Load() == 0 {
				t.Errorf("no request admitted")
			}
			t.Logf("%d admitted, %d stale", admitted.Load(), stale.Load())
		})
	}
}
