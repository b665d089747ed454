package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ClientGo is the timing of client-go's leaderelection, tenure's peer on
// Kubernetes. The zero value means client-go's documented defaults for core
// clients scaled to the lease: LeaseDuration the benchmark's TTL,
// RenewDeadline two thirds of it, RetryPeriod two fifteenths (15s, 10s and
// 2s at a 15s lease, client-go's defaults).
type ClientGo struct {
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// withDefaults fills in what is zero for a lease of ttl.
func (c ClientGo) withDefaults(ttl time.Duration) ClientGo {
	if c.LeaseDuration == 0 {
		c.LeaseDuration = ttl
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = c.LeaseDuration * 2 / 3
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = c.LeaseDuration * 2 / 15
	}
	return c
}

// runClientGo runs client-go's LeaderElector (a LeaseLock on Lease name in
// ns) as id until ctx ends, and calls lead with the leader's context when
// it leads; with release, it releases the Lease when ctx ends
// (ReleaseOnCancel). The channel is closed when the elector has returned.
func runClientGo(ctx context.Context, cs kubernetes.Interface, ns, name, id string, cg ClientGo, release bool, lead func(context.Context)) (<-chan struct{}, error) {
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: ns},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration: cg.LeaseDuration, RenewDeadline: cg.RenewDeadline, RetryPeriod: cg.RetryPeriod,
		ReleaseOnCancel: release, Name: name,
		Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: lead, OnStoppedLeading: func() {}},
	})
	if err != nil {
		return nil, fmt.Errorf("bench: client-go elector: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		le.Run(ctx)
	}()
	return done, nil
}

// clientGoRecord is client-go's id of a version of a Lease: the record its
// LeaseLock reads, as the JSON its LeaderElector compares (times in whole
// seconds). A contender's wait restarts only when it changes.
func clientGoRecord(l *coordv1.Lease) string {
	b, err := json.Marshal(resourcelock.LeaseSpecToLeaderElectionRecord(&l.Spec))
	if err != nil { // a record of strings, numbers and times always marshals
		return l.ResourceVersion
	}
	return string(b)
}

// clientGoPair hands a Lease back and forth between two client-go
// LeaderElectors with ReleaseOnCancel, each with a client of its own: the
// peer of the handover benchmark on Kubernetes.
type clientGoPair struct {
	cs            [2]kubernetes.Interface
	ns, name      string
	cg            ClientGo
	settle, phase time.Duration
	cur           *cgLeader
	n             int
}

// cgLeader is a running client-go elector.
type cgLeader struct {
	cancel context.CancelFunc
	done   <-chan struct{}
	acting chan time.Time // when it began to lead
}

func newClientGoPair(ctx context.Context, t Target, name string, cg ClientGo, settle, phase time.Duration) (*clientGoPair, error) {
	p := &clientGoPair{name: name, cg: cg, settle: settle, phase: phase}
	for i := range p.cs {
		cs, ns, err := t.kubeClient()
		if err != nil {
			return nil, err
		}
		p.cs[i], p.ns = cs, ns
	}
	l, err := p.lead(ctx, 0)
	if err != nil {
		return nil, err
	}
	p.cur = l
	if _, err := wait(ctx, l.acting, 2*cg.LeaseDuration+30*time.Second, "first client-go leader"); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// lead starts elector i campaigning.
func (p *clientGoPair) lead(ctx context.Context, i int) (*cgLeader, error) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &cgLeader{cancel: cancel, acting: make(chan time.Time, 1)}
	done, err := runClientGo(rctx, p.cs[i], p.ns, p.name, fmt.Sprintf("bench-client-go-%d", i), p.cg, true, func(lctx context.Context) {
		l.acting <- time.Now()
		<-lctx.Done()
	})
	if err != nil {
		cancel()
		return nil, err
	}
	l.done = done
	return l, nil
}

// trial starts the other elector, lets it wait, makes the leader let go
// (cancel: client-go releases the Lease) and times the takeover.
func (p *clientGoPair) trial(ctx context.Context) (time.Duration, error) {
	next, err := p.lead(ctx, (p.n+1)%2)
	if err != nil {
		return 0, err
	}
	if err := sleep(ctx, p.settle+randPhase(p.phase)); err != nil {
		next.cancel()
		<-next.done
		return 0, err
	}
	released := time.Now()
	p.cur.cancel()
	<-p.cur.done
	p.cur = next
	p.n++
	at, err := wait(ctx, next.acting, 2*p.cg.LeaseDuration+30*time.Second, "client-go successor acting")
	if err != nil {
		return 0, err
	}
	return at.Sub(released), nil
}

func (p *clientGoPair) close() {
	if p.cur != nil {
		p.cur.cancel()
		<-p.cur.done
		p.cur = nil
	}
}

// addClientGoSettings records the peer's timing in r's settings.
func addClientGoSettings(r *Report, cg ClientGo) {
	r.Settings["client_go_lease_duration_ms"] = ms(cg.LeaseDuration)
	r.Settings["client_go_renew_deadline_ms"] = ms(cg.RenewDeadline)
	r.Settings["client_go_retry_period_ms"] = ms(cg.RetryPeriod)
}
