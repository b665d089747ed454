package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// FailoverOptions configure Failover.
type FailoverOptions struct {
	Target
	// Trials is how many leaders each implementation loses. Default 30.
	Trials int
	// TTL is the lease of every implementation. Default 2s.
	TTL time.Duration
	// Settle is how long the next contender has been waiting when the
	// leader is killed. Default 300ms.
	Settle time.Duration
	// SeedPoll is how often the seed's contender re-runs its acquisition.
	// Default 5ms.
	SeedPoll time.Duration
	// RenewInterval is how often tenure's leader renews. Zero means
	// tenure's default (TTL/3). The peer keeps its own cadence (etcd's
	// client sends a session's keepalive every TTL/3, on a 500ms tick).
	RenewInterval time.Duration
	// Command returns the command that runs a contender process with the
	// spec: the tenure binary's `bench child --spec`, or a test binary.
	// Required.
	Command func(spec string) *exec.Cmd
	// ClientGo is the peer's timing on Kubernetes (see ClientGo); its
	// LeaseDuration defaults to TTL.
	ClientGo ClientGo
}

func (o *FailoverOptions) defaults() error {
	if o.Trials == 0 {
		o.Trials = 30
	}
	if o.TTL == 0 {
		o.TTL = 2 * time.Second
	}
	if o.Settle == 0 {
		o.Settle = 300 * time.Millisecond
	}
	if o.SeedPoll == 0 {
		o.SeedPoll = 5 * time.Millisecond
	}
	if o.Kubeconfig != "" {
		o.ClientGo = o.ClientGo.withDefaults(o.TTL)
	}
	var errs []error
	if o.Trials < 1 {
		errs = append(errs, fmt.Errorf("%w: --trials %d: want at least 1", ErrInvalidOptions, o.Trials))
	}
	if o.TTL < time.Second || o.TTL%time.Second != 0 {
		errs = append(errs, fmt.Errorf("%w: --ttl %s: want whole seconds, 1s or more (etcd leases are whole seconds)", ErrInvalidOptions, o.TTL))
	}
	if o.RenewInterval < 0 || (o.RenewInterval > 0 && o.RenewInterval >= o.TTL) {
		errs = append(errs, fmt.Errorf("%w: --renew-interval %s: want more than 0 and less than --ttl %s", ErrInvalidOptions, o.RenewInterval, o.TTL))
	}
	if o.Command == nil {
		errs = append(errs, fmt.Errorf("%w: no command for the contender processes", ErrInvalidOptions))
	}
	return errors.Join(append(errs, o.validate())...)
}

// outcome is one failover: how long it took, its floor (the old lease's
// time left at the kill, a lower bound), and whether the successor acted
// before the old lease could have expired.
type outcome struct {
	took, floor time.Duration
	early       bool
}

// Failover kills the leading process with SIGKILL and measures the time
// until the successor, another process that was already campaigning, acts.
// tenure and the peer (an etcd concurrency.Mutex holder, as `etcdctl lock`
// runs, or the seed SQL) each run a chain of processes; in each round both
// leaders are killed at once. While the successor campaigns, the old
// lease's time left is read from the coordinator every 10ms: a successor
// that acts before the latest lower bound of its expiry is a failure.
func Failover(ctx context.Context, o FailoverOptions) (*Report, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	began := time.Now()
	impls, err := failoverImpls(ctx, o)
	if err != nil {
		return nil, err
	}
	chains := make([]*chain, len(impls))
	defer func() {
		for _, c := range chains {
			if c != nil {
				c.close()
			}
		}
		for _, im := range impls {
			im.close()
		}
	}()
	for i, im := range impls {
		if chains[i], err = startChain(ctx, o, im); err != nil {
			return nil, err
		}
	}
	results := make([][]outcome, len(impls))
	for n := range o.Trials {
		// A crash comes at any moment of a leader's renewal cycle: the
		// kill waits a random phase, the same for both implementations,
		// beyond the settle time (a fixed wait would kill each at the same
		// point of its cycle every round).
		phase := rand.N(o.TTL)
		errs := make([]error, len(chains))
		var wg sync.WaitGroup
		for i, c := range chains {
			wg.Go(func() {
				var oc outcome
				oc, errs[i] = c.trial(ctx, o.Settle+phase)
				results[i] = append(results[i], oc)
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		o.progress("failover: %d/%d rounds", n+1, o.Trials)
	}
	return failoverReport(o, impls, results, began), nil
}

func failoverReport(o FailoverOptions, impls []*failImpl, results [][]outcome, began time.Time) *Report {
	r := &Report{Benchmark: "failover", Backend: o.Backend(), Settings: map[string]any{
		"trials": o.Trials, "ttl_ms": ms(o.TTL), "settle_ms": ms(o.Settle),
	}, Failures: []string{}}
	if o.RenewInterval > 0 {
		r.Settings["renew_interval_ms"] = ms(o.RenewInterval)
	}
	for i, im := range impls {
		var ds, fs []time.Duration
		fails := 0
		for n, oc := range results[i] {
			ds, fs = append(ds, oc.took), append(fs, oc.floor)
			if oc.early {
				fails++
				r.Failures = append(r.Failures, fmt.Sprintf("%s trial %d: the successor acted %s after the kill, before the old lease's expiry at the coordinator (at least %s after the kill)",
					im.name, n+1, oc.took.Round(time.Millisecond), oc.floor.Round(time.Millisecond)))
			}
		}
		row := r.addLatency(im.name, "", ds, fs, fails)
		row.Extra = map[string]float64{"p99_minus_ttl_ms": ms(time.Duration(row.Latency.P99*float64(time.Millisecond)) - o.TTL)}
	}
	r.compare("tenure", impls[1].name)
	r.Notes = append(r.Notes,
		"failover: from SIGKILL of the leading process until the successor process acts; both implementations' leaders are killed at the same moment in each round, a random phase (uniform over one TTL) after the settle time, so that the kill falls anywhere in either leader's renewal cycle",
		"floor: from the kill until the old lease was last seen live at the coordinator, polled every 10ms while the successor campaigns (a lower bound of when it ended there)",
		"failure: a successor acting while the old lease could still be live at the coordinator")
	switch {
	case o.Kubeconfig != "":
		addClientGoSettings(r, o.ClientGo)
		r.Notes = append(r.Notes, kubeFailoverNotes(o)...)
	case o.Postgres == "":
		r.Notes = append(r.Notes, "etcd: the floor includes etcd's revocation pass (every 500ms), since etcd reports an expired lease live until that pass revokes it; TimeToLive's whole seconds are rounded down",
			"renewal cadence: a lease renewed more often has more left at a crash; tenure renews every TTL/3 unless --renew-interval says otherwise, etcd's client every TTL/3 rounded up to its 500ms tick (about every 1s at TTL 2s)")
	default:
		r.Settings["seed_poll_ms"] = ms(o.SeedPoll)
	}
	r.Elapsed = ms(time.Since(began))
	return r
}

// proc is a contender process and its output lines.
type proc struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan struct{}
}

func startProc(o FailoverOptions, spec childSpec) (*proc, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	return startLines(o.Command(string(b)))
}

// startLines starts cmd and sends the lines of its standard output to the
// proc's lines.
func startLines(cmd *exec.Cmd) (*proc, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start %s: %w", cmd.Path, err)
	}
	p := &proc{cmd: cmd, lines: make(chan string, 16), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	return p, nil
}

// next waits for a line starting with one of want; an "error" line, or the
// end of the output, is an error.
func (p *proc) next(ctx context.Context, d time.Duration, want ...string) (string, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return "", fmt.Errorf("bench: contender exited before %q", want)
			}
			if strings.HasPrefix(l, "error") {
				return "", fmt.Errorf("bench: contender: %s", l)
			}
			for _, w := range want {
				if strings.HasPrefix(l, w) {
					return l, nil
				}
			}
		case <-t.C:
			return "", fmt.Errorf("bench: no %q from a contender within %s", want, d)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// kill SIGKILLs the process and reaps it.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	_ = p.cmd.Wait()
}

// actingAt parses an "acting <ns>" line.
func actingAt(line string) (boottime.Instant, error) {
	f := strings.Fields(line)
	if len(f) != 2 {
		return 0, fmt.Errorf("bench: bad line %q", line)
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	return boottime.Instant(n), err
}
