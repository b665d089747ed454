package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure/cmd/internal/bench"
	"github.com/tenure-dev/tenure/partition"
)

// benchPartitionsFlags are the flags of tenure bench partitions.
type benchPartitionsFlags struct {
	partitions, members, reference int
	ttl, steady                    time.Duration
	metrics                        []string
}

func newBenchPartitionsCommand(g *globalFlags, f *benchFlags) *cobra.Command {
	var o benchPartitionsFlags
	cmd := &cobra.Command{
		Use:   "partitions",
		Short: "Per-partition leadership at scale: balance, cold start, writes, CPU, moves, hand-over, takeover",
		Long: `partitions runs --members members of one partition group of --partitions
partitions in this process, each with a coordinator client of its own, and
measures (cmd/internal/bench's Partitions): the balance once settled, the cold
start to every partition running, the coordinator's writes per second and
the CPU in steady state, the partitions moved by a join and by a graceful
leave, the hand-over time of a planned leave, and the takeover time, with
greater tokens, after a member stops renewing (a crash). Each figure is
printed beside its target.

Writes are counted at the server: etcd's own metrics when bench starts the
etcd member in this process (with --endpoints, from the members' metrics
endpoints given by --metrics), pg_stat_user_tables with --postgres. A first
run with --reference partitions gives the ratio writes(P)/writes(reference):
renewal cost must not grow with P.`,
		Example: `  tenure bench partitions
  tenure bench partitions --postgres "$DSN" --json
  tenure bench partitions --partitions 1000 --members 5 --ttl 5s
  tenure bench partitions --endpoints http://127.0.0.1:2379,http://127.0.0.1:2381,http://127.0.0.1:2383 \
    --metrics http://127.0.0.1:9479/metrics,http://127.0.0.1:9480/metrics,http://127.0.0.1:9481/metrics`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchPartitions(cmd, g, f, &o)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&o.partitions, "partitions", 10000, "partitions in the group, P")
	fs.IntVar(&o.members, "members", 10, "members in the group, N, all in this process")
	fs.IntVar(&o.reference, "reference", 100, "P of a first, writes-only reference run for writes(P)/writes(reference); 0 skips it")
	fs.DurationVar(&o.ttl, "ttl", 10*time.Second, "the members' lease")
	fs.StringSliceVar(&o.metrics, "metrics", nil, "with --endpoints: the etcd members' Prometheus endpoints (tenure server --http's /metrics), comma-separated, to count writes at the servers")
	fs.DurationVar(&o.steady, "steady", 0, "how long steady-state writes and CPU are counted (default ten renewal intervals, at most TTL/3 each)")
	return cmd
}

// partitionsReport is tenure bench partitions --json.
type partitionsReport struct {
	Command             string  `json:"command"`
	Backend             string  `json:"backend"`
	Partitions          int     `json:"partitions"`
	Members             int     `json:"members"`
	TTLMS               int64   `json:"ttl_ms"`
	ColdStartMS         int64   `json:"cold_start_ms"`
	ClaimsPerSecond     float64 `json:"claims_per_second"`
	MaxOwned            int     `json:"max_owned"`
	Cap                 int     `json:"cap"`
	Imbalance           float64 `json:"imbalance"`
	WritesPerSecond     float64 `json:"writes_per_second"`
	ReferencePartitions int     `json:"reference_partitions,omitempty"`
	ReferenceWritesPS   float64 `json:"reference_writes_per_second,omitempty"`
	WritesRatio         float64 `json:"writes_ratio,omitempty"`
	CPUPerMember        float64 `json:"cpu_per_member"`
	JoinMoves           int     `json:"join_moves"`
	LeaveMoves          int     `json:"leave_moves"`
	LeaveP99MS          float64 `json:"leave_p99_ms"`
	LeaveMaxMS          float64 `json:"leave_max_ms"`
	CrashP99MS          float64 `json:"crash_p99_ms"`
	CrashMaxMS          float64 `json:"crash_max_ms"`
	StaleTokens         int     `json:"stale_tokens"`
}

func runBenchPartitions(cmd *cobra.Command, g *globalFlags, f *benchFlags, o *benchPartitionsFlags) error {
	if err := o.check(); err != nil {
		return err
	}
	if len(o.metrics) > 0 && !cmd.Flags().Changed("endpoints") {
		return usageError("--metrics (%s) counts the writes of the etcd members --endpoints names; without --endpoints bench starts its own and counts them itself", strings.Join(o.metrics, ","))
	}
	t, stop, err := g.benchTarget(cmd)
	if err != nil {
		return err
	}
	defer stop()
	po := o.options(g, t, !cmd.Flags().Changed("endpoints"))
	rep := partitionsReport{Command: commandLine(cmd), Backend: t.Backend()}
	fmt.Fprintf(t.Progress, "bench: on %s\n", t.Backend())
	res, err := bench.Partitions(cmd.Context(), po)
	if err != nil {
		return fmt.Errorf("bench partitions: %w", err)
	}
	rep.fill(res, o.ttl)
	if f.html != "" {
		if err := rep.writeHTML(f.html, res); err != nil {
			return err
		}
	}
	if err := rep.write(cmd.OutOrStdout(), res, f.json); err != nil {
		return err
	}
	if res.StaleTokens > 0 {
		return &exitError{code: ExitError, err: fmt.Errorf("bench partitions: %d partitions ran again with a token not greater than before", res.StaleTokens)}
	}
	return nil
}

// check validates the flags, naming them.
func (o *benchPartitionsFlags) check() error {
	switch {
	case o.partitions < 1:
		return usageError("--partitions (%d) must be at least 1", o.partitions)
	case o.members < 2:
		return usageError("--members (%d) must be at least 2: a join and a leave are measured", o.members)
	case o.reference < 0:
		return usageError("--reference (%d) must not be negative (0 skips the reference run)", o.reference)
	case o.ttl < 2*time.Second:
		return usageError("--ttl (%s) must be at least 2s", o.ttl)
	case o.steady < 0:
		return usageError("--steady (%s) must not be negative", o.steady)
	}
	return nil
}

// options are the benchmark's options for target t; writes are counted
// when the server can be asked: PostgreSQL, or etcd in this process
// (local).
func (o *benchPartitionsFlags) options(g *globalFlags, t bench.Target, local bool) bench.PartitionsOptions {
	cf := g.coord
	cf.endpoints, cf.postgres = t.Endpoints, t.Postgres
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mc := bench.PartitionsOptions{
		Partitions: o.partitions, Members: o.members, TTL: o.ttl, Steady: o.steady,
		Reference: o.reference, Progress: t.Progress,
		NewCoordinator: func(ctx context.Context) (partition.Coordinator, error) {
			return openCoordinator(ctx, &cf, quiet)
		},
	}
	switch {
	case t.Postgres != "":
		mc.Writes = func(ctx context.Context) (int64, error) { return bench.PostgresGroupWrites(ctx, t.Postgres) }
		mc.WritesLag = bench.PostgresGroupWritesLag
	case local:
		mc.Writes = bench.EtcdWrites
	case len(o.metrics) > 0:
		mc.Writes = bench.EtcdWritesAt(o.metrics)
	}
	return mc
}

// fill copies m's figures into the report.
func (r *partitionsReport) fill(m bench.PartitionsResult, ttl time.Duration) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	r.Partitions, r.Members, r.TTLMS = m.Partitions, m.Members, ttl.Milliseconds()
	r.ColdStartMS, r.ClaimsPerSecond = m.ColdStart.Milliseconds(), m.ClaimsPerSecond
	r.MaxOwned, r.Cap, r.Imbalance = m.MaxOwned, m.Cap, m.Imbalance
	r.WritesPerSecond, r.CPUPerMember = m.WritesPerSecond, m.CPUPerMember
	r.JoinMoves, r.LeaveMoves, r.StaleTokens = m.JoinMoves, m.LeaveMoves, m.StaleTokens
	r.LeaveP99MS, r.LeaveMaxMS = ms(m.LeaveP99), ms(m.LeaveMax)
	r.CrashP99MS, r.CrashMaxMS = ms(m.CrashP99), ms(m.CrashMax)
	r.ReferencePartitions, r.ReferenceWritesPS, r.WritesRatio = m.ReferencePartitions, m.ReferenceWritesPerSecond, m.WritesRatio
}

// write prints the report: JSON, or the table of figures beside targets.
func (r *partitionsReport) write(w io.Writer, m bench.PartitionsResult, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(w, "%s\n%s, TTL %s\n\n", r.Command, r.Backend, time.Duration(r.TTLMS)*time.Millisecond)
	m.WriteText(w, time.Duration(r.TTLMS)*time.Millisecond)
	return nil
}

// writeHTML writes the report as a page (--html): the CDFs of the planned
// leave's hand-overs and of the crash's takeovers, one point per partition,
// and every figure beside its target.
func (r *partitionsReport) writeHTML(path string, m bench.PartitionsResult) error {
	ttl := time.Duration(r.TTLMS) * time.Millisecond
	page := &bench.Report{Benchmark: "partitions", Backend: r.Backend, Command: r.Command, Failures: []string{},
		Settings: map[string]any{"partitions": r.Partitions, "members": r.Members, "ttl_ms": r.TTLMS}}
	page.AddLatency("tenure", "planned-leave hand-over", m.LeaveTimes)
	page.AddLatency("tenure", "crash takeover", m.CrashTimes)
	if r.StaleTokens > 0 {
		page.Failures = append(page.Failures, fmt.Sprintf("%d partitions ran again with a token not greater than before", r.StaleTokens))
	}
	for _, f := range m.Figures(ttl) {
		note := f.What + ": " + f.Measured
		if f.Target != "" {
			note += " (target " + f.Target + ")"
		}
		page.Notes = append(page.Notes, note)
	}
	page.Notes = append(page.Notes,
		"planned-leave hand-over: for each partition of the member that left gracefully, from the leave's start until it ran on another member",
		"crash takeover: for each partition of the member that stopped renewing, from the stop until it ran elsewhere with a greater token")
	h, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	if err := errors.Join(page.WriteHTML(h), h.Close()); err != nil {
		return fmt.Errorf("--html %s: %w", path, err)
	}
	return nil
}
