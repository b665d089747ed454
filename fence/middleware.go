package fence

import (
	"context"
	"fmt"
	"net/http"
)

// MiddlewareOption configures Middleware: one of Drain, Unordered or
// Serialize.
type MiddlewareOption func(*middleware)

// Drain is Middleware's default, to say so explicitly: requests
// are admitted with Fence.Enter, so a request with a newer token waits until
// the handlers of requests with older tokens have returned before its own
// handler starts. Handlers of two different terms then never overlap.
// Handlers of the same token still run concurrently. A request that ends
// while it waits is answered 503.
func Drain() MiddlewareOption {
	return func(m *middleware) { m.drain = true }
}

// Unordered makes Middleware admit requests with Fence.Admit and not wait
// for older handlers: a handler admitted with token 5 may still be writing
// after one with token 6 has written, and overwrite it. Use it only when the
// handler itself stores the token with the data it protects and rejects
// lower ones (fence.Register, postgres.FenceUpdate, etcd.FencedTxn), so that
// the middleware is an early filter, not the guard.
func Unordered() MiddlewareOption {
	return func(m *middleware) { m.drain = false }
}

// Serialize makes Middleware run one handler at a time: a request waits for
// its turn, and only then is its token checked and recorded, so no handler
// ever runs concurrently with another, and none with an older token runs
// after one with a newer token. The order of turns among waiting requests is
// unspecified. A request that ends while it waits is answered 503. It is
// for a resource that takes one writer at a time.
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
// a lower token is rejected, and it never reaches next. And by default
// (Drain) a request with a newer token waits until every handler of an
// older token has returned, so an older term's handler can never write
// after a newer term's: the resource sees the terms in token order. Use
// Serialize to run one handler at a time, or Unordered to skip the wait
// when the handler guards its own writes with the token.
//
// Middleware panics if f or next is nil.
func Middleware(f *Fence, next http.Handler, opts ...MiddlewareOption) http.Handler {
	if f == nil {
		panic("fence: Middleware with a nil *Fence")
	}
	if next == nil {
		panic("fence: Middleware with a nil next handler")
	}
	m := &middleware{f: f, next: next, drain: true}
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
