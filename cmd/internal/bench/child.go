package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// childEnv, when set in a test binary's environment, holds a child spec: the
// binary runs as a failover contender instead of running tests.
const childEnv = "TENURE_BENCH_CHILD"

// childSpec says what a failover contender process runs.
type childSpec struct {
	Impl       string        `json:"impl"` // tenure, etcd-mutex, seed-sql or client-go
	Endpoints  []string      `json:"endpoints,omitempty"`
	Postgres   string        `json:"postgres,omitempty"`
	Kubeconfig string        `json:"kubeconfig,omitempty"`
	Namespace  string        `json:"namespace,omitempty"`
	ClientGo   ClientGo      `json:"client_go,omitempty"` // client-go's timing
	Key        string        `json:"key"`
	Holder     string        `json:"holder"`
	TTL        time.Duration `json:"ttl_ns"`
	Poll       time.Duration `json:"poll_ns,omitempty"`  // seed-sql's contender
	Renew      time.Duration `json:"renew_ns,omitempty"` // tenure's renew interval; 0: its default
}

// Lines a contender writes on its standard output.
const (
	lineReady  = "ready"  // connected, and campaigning (or about to)
	lineActing = "acting" // "acting <boot-clock ns>": it leads from then on
)

// RunChild runs a failover contender described by spec (JSON) until it is
// killed or ctx ends, writing "ready" and then "acting <boot-clock ns>" on
// out. It returns the process's exit code. `tenure bench child` and the
// package's test binary call it; the benchmark's parent process reads its
// lines and SIGKILLs it.
func RunChild(ctx context.Context, spec string, out io.Writer) int {
	var s childSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintf(out, "error bad spec %q: %v\n", spec, err)
		return 2
	}
	t := Target{Endpoints: s.Endpoints, Postgres: s.Postgres, Kubeconfig: s.Kubeconfig, Namespace: s.Namespace}
	acting := func() { fmt.Fprintf(out, "%s %d\n", lineActing, int64(boottime.Now())) }
	var err error
	switch s.Impl {
	case "tenure":
		err = childTenure(ctx, t, s, out, acting)
	case "etcd-mutex":
		err = childMutex(ctx, t, s, out, acting)
	case "seed-sql":
		err = childSeed(ctx, t, s, out, acting)
	case "client-go":
		err = childClientGo(ctx, t, s, out, acting)
	default:
		err = fmt.Errorf("unknown impl %q", s.Impl)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(out, "error %v\n", err)
		return 1
	}
	return 0
}

func childTenure(ctx context.Context, t Target, s childSpec, out io.Writer, acting func()) error {
	c, err := t.coordinator(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	p := &probe{Coordinator: c}
	refused := p.arm()
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder, cfg.TTL = s.Key, s.Holder, s.TTL
	cfg.Margin = max(timing.MinMargin, min(cfg.Margin, s.TTL/4))
	cfg.RenewInterval = s.Renew
	e, err := tenure.NewElector(p, cfg)
	if err != nil {
		return err
	}
	go func() {
		select {
		case <-refused:
			fmt.Fprintln(out, lineReady)
		case <-ctx.Done():
		}
	}()
	return e.Run(ctx, func(ctx context.Context, _ *tenure.Term) error {
		acting()
		<-ctx.Done()
		return nil
	})
}

func childMutex(ctx context.Context, t Target, s childSpec, out io.Writer, acting func()) error {
	cl, err := t.etcdClient(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	sess, err := concurrency.NewSession(cl, concurrency.WithTTL(int((s.TTL+time.Second-1)/time.Second)))
	if err != nil {
		return err
	}
	defer sess.Close()
	m := concurrency.NewMutex(sess, s.Key)
	fmt.Fprintln(out, lineReady)
	if err := m.Lock(ctx); err != nil {
		return err
	}
	acting()
	<-ctx.Done()
	return nil
}

func childSeed(ctx context.Context, t Target, s childSpec, out io.Writer, acting func()) error {
	p, err := t.pool(ctx, 2)
	if err != nil {
		return err
	}
	defer p.Close()
	seed := Seed{p}
	fmt.Fprintln(out, lineReady)
	var token int64
	for {
		tok, ok, err := seed.Acquire(ctx, s.Key, s.Holder, s.TTL)
		if err != nil {
			return err
		}
		if ok {
			token = tok
			break
		}
		if err := sleep(ctx, s.Poll); err != nil {
			return err
		}
	}
	acting()
	for {
		if err := sleep(ctx, s.TTL/3); err != nil {
			return nil
		}
		ok, err := seed.Renew(ctx, s.Key, s.Holder, token, s.TTL)
		if err != nil || !ok {
			return fmt.Errorf("lost the lease: renewed %v, %v", ok, err)
		}
	}
}
