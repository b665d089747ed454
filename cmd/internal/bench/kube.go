package bench

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"time"
)

// KubeOptions configure Kube.
type KubeOptions struct {
	Target
	// TTL is tenure's TTL and client-go's LeaseDuration in every part.
	// Default 15s, client-go's default.
	TTL time.Duration
	// ClientGo is the peer's timing; default client-go's defaults scaled to
	// TTL (15s, 10s, 2s at 15s).
	ClientGo ClientGo
	// HandoverTrials, FailoverTrials: trials of each implementation.
	// Defaults 20 and 10.
	HandoverTrials, FailoverTrials int
	// Fresh, Idle and Window configure the followers part (see
	// FollowersOptions).
	Fresh, Idle int
	Window      time.Duration
	// Command runs a failover contender process (see FailoverOptions).
	Command func(spec string) *exec.Cmd
}

// Kube runs tenure beside client-go's leaderelection on one Kubernetes API
// server, at one lease duration, in one run: graceful handover (client-go
// with ReleaseOnCancel), failover after SIGKILL of the leading process, how
// long a fresh candidate waits for a stale Lease, and the API requests of
// idle followers. It returns one report, a case per part.
func Kube(ctx context.Context, o KubeOptions) (*Report, error) {
	if o.TTL == 0 {
		o.TTL = 15 * time.Second
	}
	o.ClientGo = o.ClientGo.withDefaults(o.TTL)
	if o.HandoverTrials == 0 {
		o.HandoverTrials = 20
	}
	if o.FailoverTrials == 0 {
		o.FailoverTrials = 10
	}
	if o.Kubeconfig == "" {
		return nil, fmt.Errorf("%w: bench kube needs --kubeconfig", ErrInvalidOptions)
	}
	began := time.Now()
	parts := []struct {
		name string
		run  func() (*Report, error)
	}{
		{"handover", func() (*Report, error) {
			return Handover(ctx, HandoverOptions{Target: o.Target, Trials: o.HandoverTrials, TTL: o.TTL, ClientGo: o.ClientGo})
		}},
		{"failover", func() (*Report, error) {
			return Failover(ctx, FailoverOptions{Target: o.Target, Trials: o.FailoverTrials, TTL: o.TTL, ClientGo: o.ClientGo, Command: o.Command})
		}},
		{"", func() (*Report, error) {
			return Followers(ctx, FollowersOptions{Target: o.Target, TTL: o.TTL, ClientGo: o.ClientGo, Fresh: o.Fresh, Idle: o.Idle, Window: o.Window})
		}},
	}
	out := &Report{Benchmark: "kube", Backend: o.Backend(), Settings: map[string]any{}, Failures: []string{}}
	for _, p := range parts {
		r, err := p.run()
		if err != nil {
			return nil, err
		}
		merge(out, r, p.name)
	}
	out.Elapsed = ms(time.Since(began))
	return out, nil
}

// merge adds r's rows, series, failures and notes to out, its rows and
// series under case name when they have none, and its settings prefixed
// with it.
func merge(out, r *Report, name string) {
	for _, row := range r.Rows {
		if row.Case == "" {
			row.Case = name
		}
		out.Rows = append(out.Rows, row)
	}
	for _, s := range r.Series {
		if s.Case == "" {
			s.Case = name
		}
		out.Series = append(out.Series, s)
	}
	out.Failures = append(out.Failures, r.Failures...)
	for _, n := range r.Notes {
		if name != "" {
			n = name + ": " + n
		}
		out.Notes = append(out.Notes, n)
	}
	prefix := r.Benchmark + "_"
	for k, v := range maps.All(r.Settings) {
		out.Settings[prefix+k] = v
	}
}
