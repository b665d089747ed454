package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// PartitionsOptions configures Partitions, the scale benchmark of partition
// groups behind `tenure bench partitions`.
type PartitionsOptions struct {
	// Group is the base of the group keys measured (each run adds a suffix).
	Group string
	// Partitions is P. Default 10,000.
	Partitions int
	// Members is N, all in this process, each with its own coordinator.
	// Default 10.
	Members int
	// TTL is the members' lease. Default 10s.
	TTL time.Duration
	// Steady is how long steady-state writes and CPU are counted. Default
	// ten renewal intervals, so that every member renews the same number of
	// times in it.
	Steady time.Duration
	// Reference is P of a first run beside which writes are compared
	// (writes(P)/writes(Reference)); 0, or Writes nil, skips it.
	Reference int
	// NewCoordinator returns a coordinator for one member, as a separate
	// process would have (its own client or pool). The benchmark closes it.
	NewCoordinator func(ctx context.Context) (partition.Coordinator, error)
	// Writes, if set, returns the coordinator's count of writes so far,
	// counted at the server (etcd's metrics, pg_stat_user_tables).
	Writes func(ctx context.Context) (int64, error)
	// WritesLag is how late Writes may count a write: the steady state's
	// count starts at least this long after the cold start settled, so
	// that it counts none of the cold start's claims (PostgreSQL's
	// statistics: PostgresGroupWritesLag).
	WritesLag time.Duration
	// Progress, if set, gets a line as each run and phase begins.
	Progress io.Writer
	// Limit is how long a phase may take before the run fails with a
	// *PhaseError. Default 3 TTLs plus 30s.
	Limit time.Duration
}

// PartitionsResult is what Partitions found.
type PartitionsResult struct {
	Partitions, Members int
	// ColdStart is the time from starting every member to every partition
	// run, balanced.
	ColdStart time.Duration
	// MaxOwned is the most partitions one member ran once settled; Cap is
	// ⌈P/N⌉; Imbalance is MaxOwned / (P/N).
	MaxOwned, Cap int
	Imbalance     float64
	// WritesPerSecond is the coordinator's writes per second in steady
	// state; −1 when PartitionsOptions.Writes is nil.
	WritesPerSecond float64
	// CPUPerMember is this process's CPU time per second of steady state,
	// in cores, divided by the members (it includes an in-process server).
	CPUPerMember float64
	// JoinMoves and LeaveMoves are how many partitions changed hands when a
	// member joined and when one left gracefully.
	JoinMoves, LeaveMoves int
	// LeaveP99 and LeaveMax are how long after a graceful leave began its
	// partitions ran again elsewhere (99th percentile, slowest).
	LeaveP99, LeaveMax time.Duration
	// CrashP99 and CrashMax are how long after a member stopped renewing
	// (its coordinator closed, no leave) its partitions ran again
	// elsewhere, with greater tokens.
	CrashP99, CrashMax time.Duration
	// LeaveTimes and CrashTimes are the samples behind them: for each
	// partition of the member that left or crashed, how long until it ran
	// elsewhere, sorted.
	LeaveTimes, CrashTimes []time.Duration
	// StaleTokens counts partitions re-run with a token not greater than
	// before (must be 0).
	StaleTokens int
	// ClaimsPerSecond is P over ColdStart: how fast the group claimed and
	// started its partitions.
	ClaimsPerSecond float64
	// ReferencePartitions is P of the reference run; 0 when none ran.
	ReferencePartitions int
	// ReferenceWritesPerSecond is the reference run's steady-state writes.
	ReferenceWritesPerSecond float64
	// WritesRatio is WritesPerSecond / ReferenceWritesPerSecond: 0 when
	// not measured.
	WritesRatio float64
}

// Partitions runs a reference run with o.Reference partitions (when it is
// positive and o.Writes is set), then a run with o.Partitions, each of
// o.Members members of one group in this process, and returns the second
// run's figures (cold start, balance, steady-state writes and CPU, the
// moves of a join and of a graceful leave, the hand-over time of a planned
// leave and the takeover time after a member stops renewing) with the
// ratio of the two runs' steady-state writes.
func Partitions(ctx context.Context, o PartitionsOptions) (PartitionsResult, error) {
	o = o.withDefaults()
	var res PartitionsResult
	if o.Reference > 0 && o.Writes != nil {
		ref := o
		ref.Partitions = o.Reference
		fmt.Fprintf(o.Progress, "bench: reference run, P=%d, N=%d\n", ref.Partitions, ref.Members)
		r, err := measurePartitions(ctx, ref)
		if err != nil {
			return res, fmt.Errorf("reference P=%d: %w", o.Reference, err)
		}
		res.ReferencePartitions, res.ReferenceWritesPerSecond = o.Reference, r.WritesPerSecond
	}
	fmt.Fprintf(o.Progress, "bench: P=%d, N=%d, TTL %s\n", o.Partitions, o.Members, o.TTL)
	r, err := measurePartitions(ctx, o)
	r.ReferencePartitions, r.ReferenceWritesPerSecond = res.ReferencePartitions, res.ReferenceWritesPerSecond
	if err != nil {
		return r, err
	}
	if r.ReferenceWritesPerSecond > 0 && r.WritesPerSecond >= 0 {
		r.WritesRatio = r.WritesPerSecond / r.ReferenceWritesPerSecond
	}
	return r, nil
}

func (o PartitionsOptions) withDefaults() PartitionsOptions {
	if o.Group == "" {
		o.Group = "bench/partitions"
	}
	if o.Partitions == 0 {
		o.Partitions = 10000
	}
	if o.Members == 0 {
		o.Members = 10
	}
	if o.TTL == 0 {
		o.TTL = 10 * time.Second
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Limit == 0 {
		o.Limit = 3*o.TTL + 30*time.Second
	}
	return o
}

// measurer runs the members of one run.
type measurer struct {
	o        PartitionsOptions
	pcfg     partition.Config
	warnings *warnings
	started  atomic.Int64 // partition functions called so far
	running  atomic.Int64 // partition functions not returned yet
	mu       sync.Mutex
	runs     map[string][]run // partition key → terms begun, in order
	nodes    map[string]*measured
}

type run struct {
	member string
	token  uint64
	at     time.Time
}

type measured struct {
	name   string
	coord  tenure.Coordinator
	g      *partition.Group
	cancel context.CancelFunc
	done   chan error
}

// measurePartitions runs one group of o.Partitions partitions and
// o.Members members and measures it.
func measurePartitions(ctx context.Context, o PartitionsOptions) (PartitionsResult, error) {
	m := &measurer{o: o, warnings: newWarnings(), runs: map[string][]run{}, nodes: map[string]*measured{}}
	m.pcfg = partition.DefaultConfig()
	m.pcfg.Key = fmt.Sprintf("%s/%d", o.Group, time.Now().UnixNano())
	m.pcfg.Partitions, m.pcfg.TTL = o.Partitions, o.TTL
	m.pcfg.Margin = o.TTL / 10
	if o.Steady == 0 {
		safe := timing.SafeLease(o.TTL, m.pcfg.MaxDrift, m.pcfg.Margin)
		m.o.Steady = 10 * timing.NextRenewal(timing.RenewInterval(m.pcfg.TTL, m.pcfg.RenewInterval), m.pcfg.TTL, safe)
	}
	defer m.stopAll()
	res := PartitionsResult{Partitions: o.Partitions, Members: o.Members, WritesPerSecond: -1}
	if err := m.coldStart(ctx, &res); err != nil {
		return res, err
	}
	if err := m.steady(ctx, &res); err != nil {
		return res, err
	}
	if err := m.join(ctx, &res); err != nil {
		return res, err
	}
	if err := m.leave(ctx, &res); err != nil {
		return res, err
	}
	return res, m.crash(ctx, &res)
}
