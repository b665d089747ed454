package chaos

import (
	"context"
	"net/http"
	"sync"
)

// A lease begins when the request that started or extended it was sent.
// The recorder cannot see that request when the coordinator makes several
// in one call: on Kubernetes, Acquire may read the Lease before it writes,
// and a read on a slow link takes longer than the margin, so the call's
// own start would place the lease too early and report overruns that are
// not. A node's Kubernetes client therefore reports, below the
// coordinator, when each write it sends (a PUT, POST or PATCH) entered its
// HTTP transport and whether the server applied it: the recorder dates the
// lease from the write that succeeded, measured where the coordinator's
// own reading of Sent cannot move it (a coordinator that read Sent late
// would be caught). Coordinators whose clients do not report (etcd,
// PostgreSQL: one request starts the lease, the call's first) keep the
// call's start.

// writeSends collects the writes of one coordinator call.
type writeSends struct {
	mu     sync.Mutex
	lastOK int64 // when the last write the server applied was sent; 0: none
}

// sendsKey carries a call's writeSends in its context, from the recorder
// to the client's transport (sendClock).
type sendsKey struct{}

// withSends returns ctx carrying a new writeSends for one call.
func withSends(ctx context.Context) (context.Context, *writeSends) {
	ws := &writeSends{}
	return context.WithValue(ctx, sendsKey{}, ws), ws
}

// wrote records that a write sent at `sent` was applied.
func (ws *writeSends) wrote(sent int64) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.lastOK = max(ws.lastOK, sent)
}

// start returns when the call's lease began: the send of the last write
// the server applied, or callStart when none was reported.
func (ws *writeSends) start(callStart int64) int64 {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.lastOK == 0 {
		return callStart
	}
	return max(ws.lastOK, callStart)
}

// sendClock is a node's HTTP transport to the Kubernetes API server
// (rest.Config.WrapTransport, beneath every wrapper client-go adds): it
// reports each write of a recorded call to that call's writeSends.
type sendClock struct{ next http.RoundTripper }

// RoundTrip sends req, and reports it when it is a write of a recorded
// call that the server applied (a 2xx status). The time is read as req
// enters the transport: no later than it goes on the wire, so a lease is
// never dated later than it began.
func (t sendClock) RoundTrip(req *http.Request) (*http.Response, error) {
	ws, _ := req.Context().Value(sendsKey{}).(*writeSends)
	if ws == nil || (req.Method != http.MethodPut && req.Method != http.MethodPost && req.Method != http.MethodPatch) {
		return t.next.RoundTrip(req)
	}
	sent := Mono()
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.StatusCode/100 == 2 {
		ws.wrote(sent)
	}
	return resp, err
}
