package etcd_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// The gRPC methods tenure's etcd coordinator calls.
const (
	rpcGrant     = "/etcdserverpb.Lease/LeaseGrant"
	rpcKeepAlive = "/etcdserverpb.Lease/LeaseKeepAlive"
	rpcTxn       = "/etcdserverpb.KV/Txn"
	rpcRange     = "/etcdserverpb.KV/Range"
	rpcWatch     = "/etcdserverpb.Watch/Watch"
)

// rpcHooks intercept the gRPC calls of one etcd client below clientv3 (and
// inside its retries): where a network loses, delays or holds back
// messages. Every hook may be nil; hooks run on the caller's goroutine, and
// one that blocks must return when its ctx ends.
type rpcHooks struct {
	// call runs when a unary call or a stream (req nil) opens, before
	// anything is sent. It may block (the request is delayed) or fail the
	// call, which is then never sent.
	call func(ctx context.Context, method string, req any) error
	// reply runs when a unary call has returned, with when its request was
	// sent, etcd's reply and error; the error it returns is what the client
	// sees. An error for a nil err drops a reply after etcd applied the
	// request.
	reply func(method string, sent stamp, req, reply any, err error) error
	// recv runs on every message a stream receives, before the client sees
	// it. It may block (the message is held back) or return an error (the
	// message is dropped and the stream fails with it).
	recv func(s *rpcStream, msg any) error
}

// errDropped is what a client sees for a reply a hook dropped. clientv3
// retries neither mutations nor reads on codes.Unknown, so the caller sees
// an outcome it cannot know.
var errDropped = status.Error(codes.Unknown, "grpcfault: reply dropped after etcd applied the request")

// A stamp is one moment on both of the clocks tenure keeps deadlines on.
type stamp struct {
	mono time.Time
	boot boottime.Instant
}

func stampNow() stamp { return stamp{time.Now(), boottime.Now()} }

// rpcStream is one intercepted stream.
type rpcStream struct {
	grpc.ClientStream
	ctx    context.Context
	method string
	hooks  []rpcHooks

	mu   sync.Mutex
	sent stamp // when the last message was sent
}

// lastSent is when the stream last sent a message.
func (s *rpcStream) lastSent() stamp {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

func (s *rpcStream) SendMsg(m any) error {
	s.mu.Lock()
	s.sent = stampNow()
	s.mu.Unlock()
	return s.ClientStream.SendMsg(m)
}

func (s *rpcStream) RecvMsg(m any) error {
	if err := s.ClientStream.RecvMsg(m); err != nil {
		return err
	}
	for _, h := range s.hooks {
		if h.recv == nil {
			continue
		}
		if err := h.recv(s, m); err != nil {
			return err
		}
	}
	return nil
}

// hookedClient returns an etcd client for eps whose gRPC calls pass through
// hooks, in order (a hook that records should come before one that drops),
// closed at cleanup.
func hookedClient(t testing.TB, eps []string, hooks ...rpcHooks) *clientv3.Client {
	t.Helper()
	calls := func(ctx context.Context, method string, req any) error {
		for _, h := range hooks {
			if h.call == nil {
				continue
			}
			if err := h.call(ctx, method, req); err != nil {
				return err
			}
		}
		return nil
	}
	cl, err := clientv3.New(clientv3.Config{
		Endpoints:   eps,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				if err := calls(ctx, method, req); err != nil {
					return err
				}
				sent := stampNow()
				err := invoker(ctx, method, req, reply, cc, opts...)
				for _, h := range hooks {
					if h.reply != nil {
						err = h.reply(method, sent, req, reply, err)
					}
				}
				return err
			}),
			grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				if err := calls(ctx, method, nil); err != nil {
					return nil, err
				}
				cs, err := streamer(ctx, desc, cc, method, opts...)
				if err != nil {
					return nil, err
				}
				return &rpcStream{ClientStream: cs, ctx: ctx, method: method, hooks: hooks}, nil
			}),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// A gate holds calls back until it opens; it opens at the latest when the
// test cleans up, so that nothing stays blocked on it.
type gate struct {
	once sync.Once
	ch   chan struct{}
}

// newGate returns a closed gate. Create it after the clients whose calls
// it holds, so that it opens before they close.
func newGate(t testing.TB) *gate {
	g := &gate{ch: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

func (g *gate) isOpen() bool {
	select {
	case <-g.ch:
		return true
	default:
		return false
	}
}

// wait blocks until g opens or ctx ends.
func (g *gate) wait(ctx context.Context) error {
	select {
	case <-g.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// txnDeletes reports whether req is a transaction whose success branch
// deletes etcd key ek.
func txnDeletes(req any, ek string) bool {
	r, ok := req.(*pb.TxnRequest)
	if !ok {
		return false
	}
	for _, op := range r.Success {
		if d := op.GetRequestDeleteRange(); d != nil && string(d.Key) == ek {
			return true
		}
	}
	return false
}

// txnPutLease returns the lease of the put of etcd key ek in the success
// branch of transaction req, if there is one.
func txnPutLease(req any, ek string) (clientv3.LeaseID, bool) {
	r, ok := req.(*pb.TxnRequest)
	if !ok {
		return 0, false
	}
	for _, op := range r.Success {
		if p := op.GetRequestPut(); p != nil && string(p.Key) == ek {
			return clientv3.LeaseID(p.Lease), true
		}
	}
	return 0, false
}

// watchSees reports whether watch response msg carries an event on ek.
func watchSees(msg any, ek string) bool {
	r, ok := msg.(*pb.WatchResponse)
	if !ok {
		return false
	}
	for _, ev := range r.Events {
		if string(ev.Kv.Key) == ek {
			return true
		}
	}
	return false
}

// loseNextReply returns hooks that, once armed is set, drop the reply of
// the next call of method that etcd applied, and disarm.
func loseNextReply(method string, armed *atomic.Bool) rpcHooks {
	return rpcHooks{reply: func(m string, _ stamp, _, _ any, err error) error {
		if m == method && err == nil && armed.CompareAndSwap(true, false) {
			return errDropped
		}
		return err
	}}
}
