package fence

import (
	"context"
	"fmt"
	"net/http"
)

// MiddlewareOption configures Middleware.
type MiddlewareOption func(*middleware)

// Drain makes Middleware admit requests with Fence.Enter instead of
// Fence.Admit: a request with a newer token waits until the handlers of
// requests with older tokens have returned before its own handler starts.
// Handlers of two different terms then never overlap. Handlers of the same
// token still run concurrently. A request that ends while it waits is
// answered 503.
func Drain() MiddlewareOption {
	return func(m *middleware) { m.drain = true }
}

// Serialize makes Middleware run one handler at a time: a request waits for
// its turn, and only then is its token checked and recorded, so no handler
// ever runs concurrently with another, and none with an older token runs
// after one with a newer token. The order of turns among waiting requests is
// unspecified. A request that ends while it waits is answered 503.
func Serialize() MiddlewareOption {
	return func(m *middleware) { m.turn = make(chan struct{}, 1) }
}

type middleware struct {
	f     *Fence
	next  http.Handler
	drain bool
	turn  chan struct{} // non-nil when serializing; holds the running request
}

// Middleware guards next with f. For each request it reads the Fencing-Token
// header and answers, with an RFC 9457 problem body (see ProblemFor):
//
//   - 428 Precondition Required when the header is missing;
//   - 400 Bad Request when it is not one positive base-10 uint64
//     ("abc", "-1", "0", "1.5", "1, 2", a value over 2⁶⁴−1, two headers);
//   - 409 Conflict, with presented and required, when the token is lower
//     than the highest f has accepted.
//
// Otherwise the request is admitted and passed to next, with its token in
// the context (TokenFromContext).
//
// What is guaranteed: admission is atomic with recording the token in f.
// Once a token has been admitted, every request that arrives afterwards with
// a lower token is rejected, and it never reaches next. By default, handlers
// of lower tokens admitted earlier may still be running, concurrently with
// the newer token's handlers; use Drain to make the newer token wait for
// them, or Serialize to run one handler at a time.
//
// Middleware panics if f or next is nil.
func Middleware(f *Fence, next http.Handler, opts ...MiddlewareOption) http.Handler {
	if f == nil {
		panic("fence: Middleware with a nil *Fence")
	}
	if next == nil {
		panic("fence: Middleware with a nil next handler")
	}
	m := &middleware{f: f, next: next}
	for _, opt := range opts {
		opt(m)
	}
	return m
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, err := TokenFromHeader(r.Header)
	if err != nil {
		WriteError(w, err)
		return
	}
	ctx := r.Context()
	if m.turn != nil {
		select {
		case m.turn <- struct{}{}:
			defer func() { <-m.turn }()
		case <-ctx.Done():
			WriteError(w, fmt.Errorf("fence: request ended while waiting for its turn: %w", context.Cause(ctx)))
			return
		}
	}
	if m.drain {
		release, err := m.f.Enter(ctx, token)
		if err != nil {
			WriteError(w, err)
			return
		}
		defer release()
	} else if err := m.f.Admit(token); err != nil {
		WriteError(w, err)
		return
	}
	m.next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, tokenKey{}, token)))
}
