package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tenure-dev/tenure/cmd/internal/bench"
	"github.com/tenure-dev/tenure/postgres"
)

// benchFlags are the flags every bench subcommand has.
type benchFlags struct {
	json bool
	html string
}

func newBenchCommand(g *globalFlags) *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench (handover | failover | throughput | ttl | partitions | footprint)",
		Short: "Measure tenure beside the recipes you would use instead",
		Long: `bench runs tenure and the peer a user would pick instead alternately in
one run, on real servers, and prints each figure with the ratio between
them and the physical floor it cannot beat, measured in the same run.

By default it starts an etcd member of its own on this machine (in a
temporary directory). --endpoints runs against your etcd cluster, --postgres
against your PostgreSQL database (bench creates the table
tenure_bench_seed there for the seed SQL, and tenure's own table).

Progress goes to stderr; the table to stdout, or JSON with --json (every
duration in milliseconds, in fields named *_ms). --html FILE also writes a
self-contained page with latency CDF plots. Each benchmark finishes in
under 2 minutes with its defaults.`,
		Example: `  tenure bench handover
  tenure bench failover --trials 50 --html failover.html
  tenure bench throughput --postgres "$DSN" --json
  tenure bench ttl --ttls 1s,2s,5s --pause 800ms --pause-rate 2
  tenure bench footprint`,
		Args: noArgs,
	}
	cmd.PersistentFlags().BoolVar(&f.json, "json", false, "print the report as JSON instead of a table")
	cmd.PersistentFlags().StringVar(&f.html, "html", "", "also write the report as a self-contained HTML page to this file")
	cmd.AddCommand(newBenchHandoverCommand(g, &f), newBenchFailoverCommand(g, &f),
		newBenchThroughputCommand(g, &f), newBenchTTLCommand(g, &f), newBenchChildCommand(), newBenchPartitionsCommand(g, &f),
		newBenchKubeCommand(g, &f), newBenchFootprintCommand(g, &f))
	return cmd
}

// target returns the coordinator the benchmark runs against: the flags' or,
// when neither --endpoints nor --postgres was given, an etcd member started
// here; stop stops it.
func (g *globalFlags) benchTarget(cmd *cobra.Command) (t bench.Target, stop func(), err error) {
	if err := g.coord.check(cmd.Flags()); err != nil {
		return t, nil, err
	}
	if g.coord.kube() {
		return kubeBenchTarget(cmd, g)
	}
	t.Progress = cmd.ErrOrStderr()
	if g.coord.postgres != "" {
		t.Postgres = g.coord.postgres
		fmt.Fprintf(t.Progress, "bench: using PostgreSQL at %s (chosen by %s)\n", postgres.RedactDSN(t.Postgres), g.coord.chosenBy)
		return t, func() {}, nil
	}
	if fl := cmd.Flags().Lookup("endpoints"); fl != nil && fl.Changed {
		t.Endpoints = g.coord.endpoints
		fmt.Fprintf(t.Progress, "bench: using etcd at %s (chosen by %s)\n", strings.Join(t.Endpoints, ","), g.coord.chosenBy)
		return t, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "tenure-bench-")
	if err != nil {
		return t, nil, err
	}
	s, err := bench.StartEtcd(cmd.Context(), dir)
	if err != nil {
		os.RemoveAll(dir)
		return t, nil, err
	}
	fmt.Fprintf(t.Progress, "bench: started etcd at %s (data in %s)\n", strings.Join(s.Endpoints(), ","), dir)
	t.Endpoints = s.Endpoints()
	return t, func() { s.Close(); os.RemoveAll(dir) }, nil
}

// runBench runs one benchmark against the flags' target and writes its
// report.
func runBench(cmd *cobra.Command, g *globalFlags, f *benchFlags, run func(context.Context, bench.Target) (*bench.Report, error)) error {
	t, stop, err := g.benchTarget(cmd)
	if err != nil {
		return err
	}
	defer stop()
	r, err := run(cmd.Context(), t)
	if errors.Is(err, bench.ErrInvalidOptions) {
		return usageError("%w", err)
	}
	if err != nil {
		return err
	}
	r.Command = commandLine(cmd)
	if err := writeBenchReport(cmd.OutOrStdout(), r, f); err != nil {
		return err
	}
	if len(r.Failures) > 0 {
		return &exitError{code: ExitError, err: fmt.Errorf("bench %s: %d safety failures", r.Benchmark, len(r.Failures))}
	}
	return nil
}

func writeBenchReport(out io.Writer, r *bench.Report, f *benchFlags) error {
	if f.html != "" {
		h, err := os.Create(f.html)
		if err != nil {
			return fmt.Errorf("--html: %w", err)
		}
		if err := errors.Join(r.WriteHTML(h), h.Close()); err != nil {
			return fmt.Errorf("--html %s: %w", f.html, err)
		}
	}
	if f.json {
		return r.WriteJSON(out)
	}
	return r.WriteTable(out)
}

// commandLine is the command as typed, flags that were set included (a
// password never: it is replaced).
func commandLine(cmd *cobra.Command) string {
	parts := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		v := fl.Value.String()
		if fl.Name == "password" || fl.Name == "postgres" {
			v = "…"
		}
		if fl.Value.Type() == "bool" {
			parts = append(parts, "--"+fl.Name)
			return
		}
		parts = append(parts, fmt.Sprintf("--%s %s", fl.Name, strings.Trim(v, "[]")))
	})
	return strings.Join(parts, " ")
}

func newBenchHandoverCommand(g *globalFlags, f *benchFlags) *cobra.Command {
	var o bench.HandoverOptions
	cmd := &cobra.Command{
		Use:   "handover",
		Short: "Graceful handover: the leader lets go; time until the successor acts",
		Long: `handover times graceful handovers: the leader lets go, and the follower,
already campaigning, acts (its function called with the new token). tenure's
Elector alternates trial by trial with etcd's concurrency.Election (on
etcd) or a plain SQL lease (one UPDATE of an expired row) re-run by a
polling contender (on PostgreSQL). The
floor beside each figure, measured after each pair of trials, is the
release's notification (on etcd one write and its watch event, on
PostgreSQL one NOTIFY) plus one write round trip (the successor's
acquisition).

On release the key is deleted; followers watch it and acquire with one
transaction, so tenure's handover is one write plus the
successor's acquisition (goal: p50 at most 1.5x the Election's).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd, g, f, func(ctx context.Context, t bench.Target) (*bench.Report, error) {
				o.Target = t
				return bench.Handover(ctx, o)
			})
		},
	}
	cmd.Flags().IntVar(&o.Trials, "trials", 100, "handovers per implementation")
	cmd.Flags().DurationVar(&o.TTL, "ttl", 0, "lease of every implementation (default 10s)")
	cmd.Flags().DurationVar(&o.Settle, "settle", 0, "how long the follower has waited when the leader lets go (default 150ms)")
	cmd.Flags().DurationVar(&o.SeedPoll, "seed-poll", 0, "PostgreSQL: how often the seed's contender retries (default 5ms)")
	return cmd
}

func newBenchFailoverCommand(g *globalFlags, f *benchFlags) *cobra.Command {
	var o bench.FailoverOptions
	cmd := &cobra.Command{
		Use:   "failover",
		Short: "Crash failover: SIGKILL the leading process; time until the successor acts",
		Long: `failover kills the leading process (a tenure process of its own) with
SIGKILL and times how long the next process, already campaigning, takes to
act. Beside tenure runs an etcdctl-lock-style holder (concurrency.Mutex in a
process of its own) on etcd, or the seed SQL on PostgreSQL, at the same
TTL; both leaders are killed at once in each round. The floor is the old
lease's time left at the coordinator; a successor that acts before it is
reported as a failure (exit code 1).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run, err := contenderCommand(cmd)
			if err != nil {
				return err
			}
			o.Command = run
			return runBench(cmd, g, f, func(ctx context.Context, t bench.Target) (*bench.Report, error) {
				o.Target = t
				return bench.Failover(ctx, o)
			})
		},
	}
	cmd.Flags().IntVar(&o.Trials, "trials", 30, "leaders killed per implementation")
	cmd.Flags().DurationVar(&o.TTL, "ttl", 0, "lease of every implementation, whole seconds (default 2s)")
	cmd.Flags().DurationVar(&o.Settle, "settle", 0, "how long the next contender has waited when the leader is killed (default 300ms)")
	cmd.Flags().DurationVar(&o.RenewInterval, "renew-interval", 0, "how often tenure's leader renews (default TTL/3, tenure's default)")
	cmd.Flags().DurationVar(&o.SeedPoll, "seed-poll", 0, "PostgreSQL: how often the seed's contender retries (default 5ms)")
	return cmd
}

func newBenchThroughputCommand(g *globalFlags, f *benchFlags) *cobra.Command {
	var o bench.ThroughputOptions
	cmd := &cobra.Command{
		Use:   "throughput",
		Short: "Acquire/renew/release operations per second at several concurrencies",
		Long: `throughput runs acquire/renew/release cycles, each client on a key of its
own, for tenure and its peers in turns (etcd: concurrency.Mutex; PostgreSQL:
the seed SQL, and tenure announcing every acquisition as it used to).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd, g, f, func(ctx context.Context, t bench.Target) (*bench.Report, error) {
				o.Target = t
				return bench.Throughput(ctx, o)
			})
		},
	}
	cmd.Flags().IntSliceVar(&o.Clients, "clients", []int{1, 10, 50}, "concurrent clients, each on a key of its own")
	cmd.Flags().DurationVar(&o.Duration, "duration", 0, "time per implementation and concurrency (default 4s)")
	cmd.Flags().IntVar(&o.Rounds, "rounds", 0, "turns the implementations take, in the reverse order every other turn (default 4)")
	return cmd
}

func newBenchTTLCommand(g *globalFlags, f *benchFlags) *cobra.Command {
	var o bench.TTLOptions
	cmd := &cobra.Command{
		Use:   "ttl",
		Short: "The TTL trade-off: crash failover time against wrongful demotions per hour",
		Long: `ttl measures renewal round trips to the coordinator and this process's
stalls, adds the latency and pauses you give, and models, for each TTL, the
crash failover time and how often a healthy leader would lose its term
(wrongful demotions per hour). It ends with the shortest TTL under
--threshold. Each TTL is modelled at the lease the coordinator really
grants for it (etcd rounds up to whole seconds and to its minimum, 1.5×
its election timeout; granted_ttl_ms, and a note when they differ). The
figures are a model fed with what was measured, not a long real run, and
the output says so.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd, g, f, func(ctx context.Context, t bench.Target) (*bench.Report, error) {
				o.Target = t
				return bench.TTL(ctx, o)
			})
		},
	}
	cmd.Flags().DurationSliceVar(&o.TTLs, "ttls", nil, "TTLs to compare (default 1s,2s,5s,10s)")
	cmd.Flags().DurationVar(&o.Margin, "margin", 0, "the holder's safety margin (default min(1s, TTL/4) per TTL)")
	cmd.Flags().DurationVar(&o.Measure, "measure", 0, "how long to measure round trips and stalls (default 8s)")
	cmd.Flags().DurationVar(&o.Latency, "latency", 0, "added to every round trip measured: your network's")
	cmd.Flags().DurationVar(&o.Pause, "pause", 0, "inject process pauses of this length (GC, VM freezes)")
	cmd.Flags().Float64Var(&o.PauseRate, "pause-rate", 0, "how many --pause pauses per hour")
	cmd.Flags().Float64Var(&o.Threshold, "threshold", 0, "wrongful demotions per hour the recommended TTL stays under (default 0.1)")
	return cmd
}

// newBenchChildCommand is the hidden contender process of bench failover.
func newBenchChildCommand() *cobra.Command {
	var spec string
	cmd := &cobra.Command{
		Use:    "child --spec JSON",
		Short:  "A contender process of bench failover (internal)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if code := bench.RunChild(cmd.Context(), spec, cmd.OutOrStdout()); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&spec, "spec", "", "what to run (JSON)")
	return cmd
}
