package etcdtest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
)

// passLog records, for each term, the instants its Checks that passed
// were called and returned, on this process's clock.
type passLog struct {
	mu    sync.Mutex
	terms []*passTerm // in the order they began
}

type passTerm struct {
	holder              string
	token               uint64
	firstReturn, lastAt time.Time // first passing Check's return, last passing Check's call
	passes              int
}

// lead Checks its term every millisecond until a Check fails or ctx ends,
// recording the passes; began, if not nil, receives the term as it begins.
func (p *passLog) lead(holder string, began chan<- *tenure.Term) func(context.Context, *tenure.Term) error {
	return func(ctx context.Context, term *tenure.Term) error {
		pt := &passTerm{holder: holder, token: term.Token()}
		p.mu.Lock()
		p.terms = append(p.terms, pt)
		p.mu.Unlock()
		if began != nil {
			select {
			case began <- term:
			default:
			}
		}
		for ctx.Err() == nil {
			at := time.Now()
			ok := term.Check() == nil
			returned := time.Now()
			if !ok {
				break
			}
			p.mu.Lock()
			if pt.passes == 0 {
				pt.firstReturn = returned
			}
			pt.lastAt, pt.passes = at, pt.passes+1
			p.mu.Unlock()
			time.Sleep(time.Millisecond)
		}
		<-ctx.Done()
		return nil
	}
}

// violations lists every term that passed a Check called after a Check
// of a term with a greater token had passed and returned (then the older
// term acted after the newer one had: they overlapped), and every token
// that does not increase from one term to the next.
func (p *passLog) violations(origin time.Time) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for i, a := range p.terms {
		if i > 0 && a.token <= p.terms[i-1].token {
			out = append(out, fmt.Sprintf("token %d of %s began after token %d of %s", a.token, a.holder, p.terms[i-1].token, p.terms[i-1].holder))
		}
		for _, b := range p.terms {
			if a.passes > 0 && b.passes > 0 && a.token < b.token && a.lastAt.After(b.firstReturn) {
				out = append(out, fmt.Sprintf("token %d of %s passed a Check called %s in, after token %d of %s had passed one by %s",
					a.token, a.holder, a.lastAt.Sub(origin), b.token, b.holder, b.firstReturn.Sub(origin)))
			}
		}
	}
	return out
}

// An Elector a reaches embedded etcd through a proxy that holds back its
// replies from 1.2s into its term to 3.3s, and cuts it off from 3.5s: its
// renewal sent 2s in, whose keepalive etcd applied then, is answered 1.3s
// late (the coordinator's read of the key after it, sent then, is
// answered at once), before a's deadline, and no renewal reaches etcd
// after it. Elector b, direct, campaigns throughout. a's term acts until the
// deadline counted from that renewal's send, 4.67s in (TTL 3s, Margin
// 300ms, MaxDrift 1%), and no later: etcd expires its lease 3s after it
// received that renewal, and b leads only then. No term passes a Check
// after one with a greater token has, and tokens increase.
func TestElectorRenewalAnsweredLateOnEtcd(t *testing.T) {
	t.Parallel() // it mostly waits for a lease to expire
	c := startCluster(t, 1)
	proxy, err := tcpproxy.New("tcp", c.members[0].cfg.ClientURLs[0][len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	cfg := func(holder string) tenure.Config {
		cfg := tenure.DefaultConfig()
		cfg.Key, cfg.Holder = "held/replies", holder
		cfg.TTL, cfg.Margin, cfg.MaxDrift = 3*time.Second, 300*time.Millisecond, 0.01
		return cfg
	}
	cfgA := cfg("a")
	cfgA.RequestTimeout = 10 * time.Second // a late reply is waited for, until the deadline
	a, err := tenure.NewElector(newCoordinator(t, newClient(t, []string{"http://" + proxy.Addr()})), cfgA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tenure.NewElector(newCoordinator(t, newClient(t, c.endpoints())), cfg("b"))
	if err != nil {
		t.Fatal(err)
	}
	log := &passLog{}
	began := make(chan *tenure.Term, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { a.Run(ctx, log.lead("a", began)) })
	var term *tenure.Term
	select {
	case term = <-began:
	case <-time.After(30 * time.Second):
		t.Fatal("a did not lead within 30s")
	}
	origin := time.Now()
	wg.Go(func() { b.Run(ctx, log.lead("b", nil)) })
	for _, step := range []struct {
		at time.Duration
		do func()
	}{
		{1200 * time.Millisecond, func() { proxy.Hold(tcpproxy.Down) }},
		{3300 * time.Millisecond, func() { proxy.Release(tcpproxy.Down) }},
		{3500 * time.Millisecond, func() { proxy.Hold(tcpproxy.Up); proxy.Hold(tcpproxy.Down) }},
	} {
		time.Sleep(time.Until(origin.Add(step.at)))
		step.do()
	}
	<-term.Context().Done()
	ended := time.Since(origin)
	deadline := term.Deadline().Sub(origin)
	time.Sleep(8 * time.Second) // b leads once etcd has expired a's lease
	proxy.Release(tcpproxy.Up)
	proxy.Release(tcpproxy.Down)
	cancel()
	wg.Wait()
	if v := log.violations(origin); len(v) > 0 {
		t.Fatalf("a's term ended %s in (deadline %s); %d violations, the first: %s", ended, deadline, len(v), v[0])
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if last := log.terms[len(log.terms)-1]; last.holder != "b" || last.passes == 0 {
		t.Fatalf("the last term is %s's (token %d, %d Checks passed); want b leading after a was cut off", last.holder, last.token, last.passes)
	}
	t.Logf("a's term ended %s in, at its deadline %s; b's term %d began", ended, deadline, log.terms[len(log.terms)-1].token)
}
