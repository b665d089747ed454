package etcd_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// leaseLog records, from the gRPC calls of the clients it hooks, every
// request that started or extended a lease and that etcd applied (its reply
// came, even if a later hook dropped it), and the lease each successful put
// went on. etcd starts a lease's TTL no earlier than it receives the
// request, so a lease lasts at least until the last such send plus its TTL:
// the bound a holder's local deadline must keep to.
type leaseLog struct {
	mu   sync.Mutex
	ext  map[clientv3.LeaseID]leaseExt // the latest extension sent, by lease
	puts map[int64]clientv3.LeaseID    // revision of a put → its lease
}

// leaseExt is one grant or keepalive of a lease that etcd applied.
type leaseExt struct {
	sent stamp
	ttl  time.Duration
}

func newLeaseLog() *leaseLog {
	return &leaseLog{ext: map[clientv3.LeaseID]leaseExt{}, puts: map[int64]clientv3.LeaseID{}}
}

// hooks are the hooks that record into l; put them first.
func (l *leaseLog) hooks() rpcHooks {
	return rpcHooks{
		reply: func(method string, sent stamp, req, reply any, err error) error {
			if err != nil {
				return err
			}
			switch r := reply.(type) {
			case *pb.LeaseGrantResponse:
				l.extended(clientv3.LeaseID(r.ID), sent, r.TTL)
			case *pb.TxnResponse:
				l.put(req.(*pb.TxnRequest), r)
			}
			return nil
		},
		recv: func(s *rpcStream, msg any) error {
			if r, ok := msg.(*pb.LeaseKeepAliveResponse); ok && r.TTL > 0 {
				l.extended(clientv3.LeaseID(r.ID), s.lastSent(), r.TTL)
			}
			return nil
		},
	}
}

func (l *leaseLog) extended(id clientv3.LeaseID, sent stamp, ttl int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.ext[id]; !ok || sent.mono.After(e.sent.mono) {
		l.ext[id] = leaseExt{sent, time.Duration(ttl) * time.Second}
	}
}

// put records the lease of every put that transaction req made, also in
// nested transactions, at any depth (partition claims).
func (l *leaseLog) put(req *pb.TxnRequest, resp *pb.TxnResponse) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.putsOf(req, resp, resp.Header.Revision)
}

// putsOf records the puts of the branch of req that ran, whose responses
// are resp's, made at revision rev.
func (l *leaseLog) putsOf(req *pb.TxnRequest, resp *pb.TxnResponse, rev int64) {
	ops := req.Failure
	if resp.Succeeded {
		ops = req.Success
	}
	for i, op := range ops {
		switch {
		case op.GetRequestPut() != nil:
			l.puts[rev] = clientv3.LeaseID(op.GetRequestPut().Lease)
		case op.GetRequestTxn() != nil && i < len(resp.Responses):
			l.putsOf(op.GetRequestTxn(), resp.Responses[i].GetResponseTxn(), rev)
		}
	}
}

// leaseOfToken returns the lease the put with revision token went on.
func (l *leaseLog) leaseOfToken(token uint64) (clientv3.LeaseID, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id, ok := l.puts[int64(token)]
	return id, ok
}

// last returns the latest recorded extension of lease id.
func (l *leaseLog) last(id clientv3.LeaseID) (leaseExt, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.ext[id]
	return e, ok
}

// checkDeadline returns an error when a local deadline (on Go's clock and on
// the boot clock) of a holder configured by cfg, for a grant on lease id,
// falls after the last extension of id recorded so far plus the safe lease
// of its TTL: after the moment etcd may expire the lease, once clock drift
// and the margin are allowed for.
func (l *leaseLog) checkDeadline(cfg tenure.Config, id clientv3.LeaseID, mono time.Time, boot int64) error {
	e, ok := l.last(id)
	if !ok {
		return fmt.Errorf("no grant or keepalive of lease %x was recorded", int64(id))
	}
	safe := timing.SafeLease(e.ttl, cfg.MaxDrift, cfg.Margin)
	if over := mono.Sub(e.sent.mono.Add(safe)); over > 0 {
		return fmt.Errorf("local deadline is %s after lease %x's last extension send + %s (TTL %s, MaxDrift %v, Margin %s)", over, int64(id), safe, e.ttl, cfg.MaxDrift, cfg.Margin)
	}
	if over := time.Duration(boot - int64(e.sent.boot.Add(safe))); over > 0 {
		return fmt.Errorf("boot-clock deadline is %s after lease %x's last extension send + %s (TTL %s)", over, int64(id), safe, e.ttl)
	}
	return nil
}
