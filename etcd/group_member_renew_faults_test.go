package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/tcpproxy"
	"github.com/tenure-dev/tenure/internal/termcheck"
	"github.com/tenure-dev/tenure/partition"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// Faults below the client in RenewMember's check of a membership's key and
// mark (the transaction it sends once KeepAliveOnce has renewed the lease):
// the check's request or reply held in tenure's fault proxy, or the link
// cut, right after the keepalive's reply came back.

// proxiedClient returns a client of eps[0] through a tcpproxy, closed at
// cleanup, whose gRPC calls pass through hooks, and the proxy.
func proxiedClient(t *testing.T, eps []string, hooks ...rpcHooks) (*clientv3.Client, *tcpproxy.Proxy) {
	t.Helper()
	p, err := tcpproxy.New("tcp", strings.TrimPrefix(eps[0], "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return hookedClient(t, []string{"http://" + p.Addr()}, hooks...), p
}

// afterKeepAlive returns hooks that, once armed is set, call fault as the
// next keepalive reply reaches the client (so before the client sends its
// next request), and disarm.
func afterKeepAlive(armed *atomic.Bool, fault func()) rpcHooks {
	return rpcHooks{recv: func(s *rpcStream, _ any) error {
		if s.method == rpcKeepAlive && armed.CompareAndSwap(true, false) {
			fault()
		}
		return nil
	}}
}

// memberEtcdKeys returns the etcd keys of m's membership key and of its
// lease's mark.
func memberEtcdKeys(c interface{ EtcdKey(string) string }, m partition.Member) (key, mark string) {
	mark = c.EtcdKey(fmt.Sprintf("#members/%s#%016x", m.Group, m.Epoch))
	return mark + "#" + m.ID, mark
}

// TestRenewMemberCheckFaults: RenewMember's keepalive is answered, then the
// transaction that checks the membership's key and mark is held in the
// proxy (its request, or its reply) past the call's deadline, or the link
// is cut: RenewMember reports an error, never the membership renewed. When
// the request is held while the key or the mark is deleted by hand and
// then delivered, RenewMember reports ErrLost: it says renewed only when
// etcd saw both. Each case then heals, and (unless something was deleted)
// the next RenewMember renews: the fault, not the membership, failed it.
func TestRenewMemberCheckFaults(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	plain := newClient(t, eps)
	type env struct {
		p          *tcpproxy.Proxy
		key, mark  string
		handClient *clientv3.Client
	}
	del := func(t *testing.T, e env, k string) {
		go func() {
			// The client sends its check at once; the proxy holds it
			// while the key goes, then delivers it.
			time.Sleep(300 * time.Millisecond)
			if _, err := e.handClient.Delete(context.Background(), k); err != nil {
				t.Errorf("delete %q: %v", k, err)
			}
			e.p.Release(tcpproxy.Up)
		}()
	}
	for _, tc := range []struct {
		name    string
		fault   func(t *testing.T, e env)
		wantErr error // nil: any error
		healed  bool  // the membership is intact: renewed once healed
		renewed bool  // the fault delays the check, within the call's deadline
	}{
		{name: "request delayed", renewed: true, fault: func(_ *testing.T, e env) {
			e.p.Hold(tcpproxy.Up)
			time.AfterFunc(time.Second, func() { e.p.Release(tcpproxy.Up) })
		}},
		{name: "request held", fault: func(_ *testing.T, e env) { e.p.Hold(tcpproxy.Up) }, healed: true},
		{name: "reply held", fault: func(_ *testing.T, e env) { e.p.Hold(tcpproxy.Down) }, healed: true},
		{name: "link cut", fault: func(_ *testing.T, e env) { e.p.Cut() }, healed: true},
		{name: "mark deleted while the request is held", wantErr: tenure.ErrLost, fault: func(t *testing.T, e env) {
			e.p.Hold(tcpproxy.Up)
			del(t, e, e.mark)
		}},
		{name: "key deleted while the request is held", wantErr: tenure.ErrLost, fault: func(t *testing.T, e env) {
			e.p.Hold(tcpproxy.Up)
			del(t, e, e.key)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var armed atomic.Bool
			var e env
			var fired time.Time // when the keepalive's reply came, on this goroutine
			cl, p := proxiedClient(t, eps, afterKeepAlive(&armed, func() { fired = time.Now(); tc.fault(t, e) }))
			c := newCoordinator(t, cl)
			m := mustJoin(t, c, "renewfaults", "n1", 5*time.Second)
			e.p, e.handClient = p, plain
			e.key, e.mark = memberEtcdKeys(c, m)
			armed.Store(true)
			call, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			r, err := c.RenewMember(call, m)
			cancel()
			if armed.Load() {
				t.Fatal("the fault never fired: no keepalive reply came")
			}
			if tc.renewed {
				// The lease was extended when etcd got the keepalive, not
				// when the check came back: Sent is before the keepalive's
				// reply came.
				if err != nil || !r.Sent.Time().Before(fired) {
					t.Errorf("RenewMember(%s) with the check's %s = sent %s after the keepalive's reply, %v; want renewed, sent before it", m, tc.name, r.Sent.Time().Sub(fired), err)
				}
				return
			}
			if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Errorf("RenewMember(%s) with the check's %s = %v, %v; want an error (%v)", m, tc.name, r, err, tc.wantErr)
			}
			p.Heal()
			if !tc.healed {
				return
			}
			if _, err := c.RenewMember(ctx(t), m); err != nil {
				t.Errorf("RenewMember(%s) once healed = %v; want it renewed", m, err)
			}
		})
	}
}

// TestRunnerRenewCheckFaults runs two members of a 4-partition group, a
// through the proxy and b on a plain client. Five times, as a's keepalive
// is answered, a's link misbehaves for longer than a's TTL: the check's
// request held, its reply held, the link cut, the request held while a's
// mark is deleted by hand, or the request held 900ms (within a's
// deadline) and the link cut once its reply is in; then it heals. a's lease expires at etcd
// meanwhile (its next keepalives are held too) and b claims its
// partitions. termcheck judges every act: no partition has two owners
// acting at once, no token runs twice; and no partition function of
// either member acts (its context still live) more than actSlack past its
// term's local deadline.
func TestRunnerRenewCheckFaults(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	var armed atomic.Bool
	var fault atomic.Value // func()
	var cutAfterTxn atomic.Bool
	var p *tcpproxy.Proxy
	var lossy *clientv3.Client
	lossy, p = proxiedClient(t, eps, afterKeepAlive(&armed, func() { fault.Load().(func())() }), rpcHooks{
		reply: func(method string, _ stamp, _, _ any, err error) error {
			if method == rpcTxn && cutAfterTxn.CompareAndSwap(true, false) {
				p.Cut() // the reply is in: the client sees it, then the link goes
			}
			return err
		},
	})
	plain := newClient(t, eps)
	// actSlack bounds how late a partition's context may be cancelled after
	// its deadline: the deadline timer's scheduling on a loaded machine,
	// not a speed.
	const actSlack = 250 * time.Millisecond
	l := termcheck.New()
	var lateMu sync.Mutex
	var late []string
	fn := func(who string) partition.Func {
		return func(ctx context.Context, pt partition.Partition, term *tenure.Term) error {
			defer l.Run(pt.Key, who, term)()
			for ctx.Err() == nil {
				if over := time.Since(term.Deadline()); over > actSlack && ctx.Err() == nil {
					lateMu.Lock()
					late = append(late, fmt.Sprintf("%s ran %s (token %d) %s past its deadline", who, pt.Key, term.Token(), over))
					lateMu.Unlock()
				}
				l.Act(pt.Key, who, term)
				time.Sleep(5 * time.Millisecond)
			}
			return nil
		}
	}
	run, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	logs := &lockedBuffer{}
	member := func(who string, cl *clientv3.Client) {
		cfg := partition.DefaultConfig()
		cfg.Key, cfg.Partitions, cfg.Holder, cfg.Instance = "jobs", 4, who, "1"
		cfg.TTL, cfg.Margin, cfg.RequestTimeout = 2*time.Second, 200*time.Millisecond, 10*time.Second
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		g, err := partition.New(newCoordinator(t, cl), cfg)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = g.Run(run, fn(who)) })
	}
	member("a", lossy)
	member("b", plain)
	c := newCoordinator(t, plain)
	owners := func() map[string]int { return partitionOwners(t, c, "jobs") }
	shared := func() bool { o := owners(); return o["a#1"] > 0 && o["a#1"]+o["b#1"] == 4 }
	deleteMark := func() {
		ms, err := c.GroupMembers(ctx(t), "jobs")
		if err != nil {
			t.Error(err)
			return
		}
		for _, m := range ms {
			if m.ID == "a#1" {
				_, mark := memberEtcdKeys(c, m)
				if _, err := plain.Delete(ctx(t), mark); err != nil {
					t.Error(err)
				}
			}
		}
	}
	for _, f := range []struct {
		name  string
		fault func()
	}{
		{"request held", func() { p.Hold(tcpproxy.Up) }},
		{"reply held", func() { p.Hold(tcpproxy.Down) }},
		{"link cut", p.Cut},
		{"request held while the mark is deleted", func() { p.Hold(tcpproxy.Up); go deleteMark() }},
		// The check answers late but within a's deadline, then the link
		// goes: a's terms must end by the deadline counted from the
		// keepalive's send, before etcd expires the lease, not from the
		// check's reply.
		{"check delayed, then link cut", func() {
			p.Hold(tcpproxy.Up)
			cutAfterTxn.Store(true)
			time.AfterFunc(900*time.Millisecond, func() { p.Release(tcpproxy.Up) })
		}},
	} {
		waitFor(t, 60*time.Second, "a#1 and b#1 to share the 4 partitions before "+f.name, shared)
		fault.Store(f.fault)
		armed.Store(true)
		waitFor(t, 10*time.Second, "a#1's next keepalive ("+f.name+")", func() bool { return !armed.Load() })
		time.Sleep(4 * time.Second) // twice a's TTL: its lease expires
		if o := owners(); o["a#1"] != 0 {
			t.Errorf("%s for 4s: a#1 owns %d partitions at etcd; want 0 once its 2s lease expired", f.name, o["a#1"])
		}
		p.Heal()
	}
	waitFor(t, 60*time.Second, "a#1 and b#1 to share the 4 partitions once healed", shared)
	stop()
	wg.Wait()
	l.Verify(t)
	for _, s := range late {
		t.Error(s)
	}
	t.Logf("%d terms (a's: %d), %d acts", l.Terms(""), l.Terms("a"), l.Acts())
	if l.Terms("a") < 6 {
		t.Errorf("a ran %d terms; want at least 6 (its share again after each of 5 faults): the faults moved nothing", l.Terms("a"))
	}
}
