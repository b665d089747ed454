package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/display"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/memory"
)

type demoFlags struct {
	backend string
	nodes   int
	ttl     time.Duration
	key     string
}

func newDemoCommand(g *globalFlags) *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch three nodes elect a leader, lose it to a partition, and fence the stale one",
		Long: `demo runs a small cluster inside this process and narrates what happens:

  1. three nodes campaign for one key; one leads and writes to a fenced
     register with its fencing token;
  2. the leader is cut off from the coordinator: its renewals fail and it
     stops acting at its local deadline, before its lease can expire at the
     coordinator;
  3. another node takes over with a greater token;
  4. the partition heals and a write the old leader sent before it was cut
     off finally arrives: the register rejects it as stale.

The coordinator (--backend) is:
  etcd      an etcd member started in a temporary directory (the default);
            every node talks to it through a TCP proxy of its own, and the
            partition cuts the leader's proxy
  memory    tenure's in-process coordinator, with simulated partitions
  postgres  the PostgreSQL database named by --postgres (TENURE_POSTGRES),
            through per-node TCP proxies; the nodes' leases live in its
            cluster_leadership table (created if missing)

Giving --postgres without --backend selects postgres.

It exits 0 when the story ran as described, non-zero otherwise, in well
under a minute.`,
		Example: `  tenure demo
  tenure demo --backend memory --ttl 1s
  tenure demo --backend postgres --postgres "postgres://tenure@localhost/tenure"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, g) },
	}
	cmd.Flags().StringVar(&f.backend, "backend", "etcd", "coordinator to run on: etcd (embedded, in a temporary directory), memory or postgres")
	cmd.Flags().IntVar(&f.nodes, "nodes", 3, "number of nodes (2–9)")
	cmd.Flags().DurationVar(&f.ttl, "ttl", 3*time.Second, "lease TTL")
	cmd.Flags().StringVar(&f.key, "key", "demo/scheduler", "key the nodes compete for")
	return cmd
}

// run checks the flags and runs the demo on --backend.
func (f demoFlags) run(cmd *cobra.Command, g *globalFlags) error {
	if f.nodes < 2 || f.nodes > 9 {
		return usageError("--nodes (%d) must be between 2 and 9", f.nodes)
	}
	if err := tenure.ValidateTTL(f.ttl); err != nil {
		return usageError("--ttl: %w", err)
	}
	if f.ttl < 500*time.Millisecond || f.ttl > 20*time.Second {
		return usageError("--ttl (%s) must be between 500ms and 20s for the demo", f.ttl)
	}
	if err := tenure.ValidateKey(f.key); err != nil {
		return usageError("--key: %w", err)
	}
	if !cmd.Flags().Changed("backend") && g.coord.postgres != "" {
		f.backend = "postgres"
	}
	switch f.backend {
	case "memory":
		c := memory.New()
		defer c.Close()
		return runDemo(cmd.Context(), cmd.OutOrStdout(), func(string) tenure.Coordinator { return c }, c, f)
	case "etcd":
		if f.ttl < time.Second {
			return usageError("--ttl (%s) must be at least 1s on etcd (leases are whole seconds)", f.ttl)
		}
		return etcdDemo(cmd.Context(), cmd.OutOrStdout(), f)
	case "postgres":
		if g.coord.postgres == "" {
			return usageError("--backend postgres needs --postgres DSN (or TENURE_POSTGRES)")
		}
		return postgresDemo(cmd.Context(), cmd.OutOrStdout(), g.coord.postgres, g.coord.dialTimeout, f)
	default:
		return usageError("--backend %q is not one of: etcd, memory, postgres", f.backend)
	}
}

// partitioner cuts a holder off from the coordinator and heals it.
type partitioner interface {
	Partition(holder string)
	Heal(holder string)
}

// demo is the state of one demo run.
type demo struct {
	out   io.Writer
	start time.Time
	mu    sync.Mutex // serializes output

	events chan tenure.Transition
}

func (d *demo) say(who, what, detail string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, "%6.1fs  %-8s %-10s %s\n", time.Since(d.start).Seconds(), who, what, detail)
}

func (d *demo) step(text string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, "\n%s\n", text)
}

// runDemo tells the story, each node on the coordinator coord gives for its
// name, cutting nodes off through p.
func runDemo(ctx context.Context, out io.Writer, coord func(name string) tenure.Coordinator, p partitioner, f demoFlags) error {
	ctx, cancel := context.WithTimeout(ctx, 50*time.Second)
	defer cancel()

	d := &demo{out: out, start: time.Now(), events: make(chan tenure.Transition, 64)}
	s := &demoStory{demo: d, ctx: ctx, f: f, p: p, reg: fence.NewRegister[string](), pending: map[string]inflight{}}
	fmt.Fprintf(out, "tenure demo: %d nodes compete for %q (TTL %s) and write to a fenced register.\n", f.nodes, f.key, f.ttl)
	d.step("1. Election")

	nodeCtx, stopNodes := context.WithCancel(ctx)
	defer func() { stopNodes(); s.wg.Wait() }()
	if err := s.startNodes(nodeCtx, coord); err != nil {
		return err
	}
	for _, step := range []func() error{s.elect, s.partition, s.takeover, s.heal} {
		if err := step(); err != nil {
			return err
		}
	}
	d.step("5. Shutdown: every node resigns")
	stopNodes()
	s.wg.Wait()
	return s.finish()
}

// inflight is a write a node has sent but that has not yet arrived: the
// "in flight" write of a leader that is then cut off.
type inflight struct {
	token uint64
	value string
}

// demoStory is the state of the demo's story, told step by step.
type demoStory struct {
	*demo
	ctx context.Context
	f   demoFlags
	p   partitioner
	reg *fence.Register[string]
	wg  sync.WaitGroup

	mu      sync.Mutex
	pending map[string]inflight // per node, its latest write

	first, lost, second tenure.Transition
	leader              string
	cut                 time.Time
}

// startNodes starts f.nodes electors; each writes to the register every
// TTL/6 while it leads.
func (s *demoStory) startNodes(ctx context.Context, coord func(name string) tenure.Coordinator) error {
	for i := 1; i <= s.f.nodes; i++ {
		name := demoNodeName(i)
		cfg := tenure.DefaultConfig()
		cfg.Key, cfg.Holder, cfg.TTL, cfg.Margin = s.f.key, name, s.f.ttl, s.f.ttl/10
		cfg.OnTransition = func(t tenure.Transition) {
			select {
			case s.events <- t:
			default:
			}
		}
		e, err := tenure.NewElector(coord(name), cfg)
		if err != nil {
			return err
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_ = e.Run(ctx, func(ctx context.Context, term *tenure.Term) error { return s.lead(ctx, name, term) })
		}()
	}
	return nil
}

// lead writes to the register every TTL/6 until the term ends.
func (s *demoStory) lead(ctx context.Context, name string, term *tenure.Term) error {
	ticker := time.NewTicker(s.f.ttl / 6)
	defer ticker.Stop()
	for writes := 1; ; writes++ {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		if term.Check() != nil {
			return nil
		}
		v := fmt.Sprintf("%s write #%d", name, writes)
		// Every write is "sent" before it lands; remember the latest so
		// the story can deliver one late.
		s.mu.Lock()
		s.pending[name] = inflight{term.Token(), v}
		s.mu.Unlock()
		if err := s.reg.Write(term.Token(), v); err != nil {
			return err
		}
	}
}

// next reports transitions until one of kind want (of holder, if not "").
func (s *demoStory) next(want tenure.TransitionKind, holder string) (tenure.Transition, error) {
	for {
		select {
		case <-s.ctx.Done():
			if !errors.Is(s.ctx.Err(), context.DeadlineExceeded) {
				return tenure.Transition{}, context.Cause(s.ctx) // interrupted
			}
			return tenure.Transition{}, fmt.Errorf("demo timed out waiting for %s: %w", want, s.ctx.Err())
		case t := <-s.events:
			// The story names nodes; their instance ids add nothing.
			t.Holder, _ = display.SplitIdentity(t.Holder)
			s.report(t)
			if t.Kind == want && (holder == "" || t.Holder == holder) {
				return t, nil
			}
		}
	}
}

// elect waits for the first leader and its first writes.
func (s *demoStory) elect() error {
	var err error
	if s.first, err = s.next(tenure.Elected, ""); err != nil {
		return err
	}
	s.leader = s.first.Holder
	waitWrites(s.ctx, s.reg, 3)
	v, tok := s.reg.Read()
	s.say(s.leader, "writes", fmt.Sprintf("register = %q with token %d", v, tok))
	return nil
}

// partition cuts the leader off and waits for it to stop at its deadline.
func (s *demoStory) partition() error {
	s.step(fmt.Sprintf("2. Partition: %s is cut off from the coordinator", s.leader))
	s.p.Partition(s.leader)
	s.cut = time.Now()
	s.say(s.leader, "cut off", "renewals now fail; it keeps working until its local deadline")
	var err error
	if s.lost, err = s.next(tenure.Expired, s.leader); err != nil {
		return err
	}
	s.say(s.leader, "stopped", fmt.Sprintf("%.1fs after the cut, before its lease (%s) can expire at the coordinator", s.lost.At.Sub(s.cut).Seconds(), s.f.ttl))
	return nil
}

// takeover waits for another node to lead, with a greater token, and write.
func (s *demoStory) takeover() error {
	s.step("3. Takeover")
	for {
		var err error
		if s.second, err = s.next(tenure.Elected, ""); err != nil {
			return err
		}
		if s.second.Holder != s.leader {
			break
		}
	}
	if s.second.Token <= s.first.Token {
		return fmt.Errorf("demo: new leader's token %d is not greater than %d", s.second.Token, s.first.Token)
	}
	s.say(s.second.Holder, "takes over", fmt.Sprintf("token %d > %d, %.1fs after the cut", s.second.Token, s.first.Token, s.second.At.Sub(s.cut).Seconds()))
	waitToken(s.ctx, s.reg, s.second.Token)
	v, tok := s.reg.Read()
	s.say(s.second.Holder, "writes", fmt.Sprintf("register = %q with token %d", v, tok))
	return nil
}

// heal delivers the old leader's write from before the cut: the register
// rejects it as stale.
func (s *demoStory) heal() error {
	s.step(fmt.Sprintf("4. Heal: a write %s sent before the cut arrives late", s.leader))
	s.p.Heal(s.leader)
	s.mu.Lock()
	late := s.pending[s.leader]
	s.mu.Unlock()
	if late.token != s.first.Token {
		return fmt.Errorf("demo: %s's last write carried token %d; want %d", s.leader, late.token, s.first.Token)
	}
	err := s.reg.Write(late.token, late.value+" (late)")
	var stale *fence.StaleError
	if !errors.As(err, &stale) {
		return fmt.Errorf("demo: the deposed leader's write was not rejected as stale: %v", err)
	}
	s.say(s.leader, "rejected", fmt.Sprintf("stale token %d: the register has seen %d", stale.Presented, stale.Required))
	v, tok := s.reg.Read()
	s.say("register", "unchanged", fmt.Sprintf("%q with token %d", v, tok))
	return nil
}

// finish reports the transitions left and the summary, once every node has
// resigned.
func (s *demoStory) finish() error {
	for drained := false; !drained; {
		select {
		case t := <-s.events:
			s.report(t)
		default:
			drained = true
		}
	}
	stats := s.reg.Stats()
	gap := s.second.At.Sub(s.lost.At)
	if gap <= 0 {
		return fmt.Errorf("demo: %s started leading %s before %s stopped", s.second.Holder, -gap, s.leader)
	}
	fmt.Fprintf(s.out, "\nDone in %.1fs: %d writes accepted, %d rejected as stale; %s stopped %.1fs before %s started.\n",
		time.Since(s.start).Seconds(), stats.Accepted, stats.Rejected, s.leader, gap.Seconds(), s.second.Holder)
	return nil
}

func (d *demo) report(t tenure.Transition) {
	// The story names nodes; their instance ids add nothing.
	t.Holder, _ = display.SplitIdentity(t.Holder)
	switch t.Kind {
	case tenure.Elected:
		d.say(t.Holder, "leads", fmt.Sprintf("token %d", t.Token))
	case tenure.Expired:
		d.say(t.Holder, "demoted", "local deadline reached without a renewal")
	case tenure.Lost:
		d.say(t.Holder, "lost", "the coordinator says the grant is gone")
	case tenure.Fenced:
		d.say(t.Holder, "fenced", "the register saw a newer token")
	case tenure.Resigned:
		d.say(t.Holder, "resigned", fmt.Sprintf("token %d released", t.Token))
	}
}

// waitWrites waits until reg has accepted n writes or ctx ends.
func waitWrites(ctx context.Context, reg *fence.Register[string], n uint64) {
	for reg.Stats().Accepted < n && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
}

// waitToken waits until reg has accepted token or ctx ends.
func waitToken(ctx context.Context, reg *fence.Register[string], token uint64) {
	for reg.Token() < token && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
}
