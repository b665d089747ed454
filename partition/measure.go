package partition

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tenure-dev/tenure"
)

// MeasureConfig configures Measure, the scale benchmark behind `tenure
// bench partitions`.
type MeasureConfig struct {
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
	// NewCoordinator returns a coordinator for one member, as a separate
	// process would have (its own client or pool). Measure closes it.
	NewCoordinator func(ctx context.Context) (tenure.Coordinator, error)
	// Writes, if set, returns the coordinator's count of writes so far,
	// counted at the server (etcd's metrics, pg_stat_user_tables).
	Writes func(ctx context.Context) (int64, error)
}

// Measured is what Measure found.
type Measured struct {
	Partitions, Members int
	// ColdStart is the time from starting every member to every partition
	// run, balanced.
	ColdStart time.Duration
	// MaxOwned is the most partitions one member ran once settled; Cap is
	// ⌈P/N⌉; Imbalance is MaxOwned / (P/N).
	MaxOwned, Cap int
	Imbalance     float64
	// WritesPerSecond is the coordinator's writes per second in steady
	// state; −1 when MeasureConfig.Writes is nil.
	WritesPerSecond float64
	// CPU is this process's CPU time per second of steady state, in cores,
	// divided by the members (it includes an in-process server).
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
}

// measurer runs the members of one Measure.
type measurer struct {
	cfg   MeasureConfig
	pcfg  Config
	mu    sync.Mutex
	runs  map[string][]run // partition key → terms begun, in order
	nodes map[string]*measured
}

type run struct {
	member string
	token  uint64
	at     time.Time
}

type measured struct {
	coord  tenure.Coordinator
	g      *Group
	cancel context.CancelFunc
	done   chan error
}

// Measure runs cfg.Members members of a group of cfg.Partitions partitions
// in this process and measures cold start, balance, steady-state writes and
// CPU, the moves of a join and of a graceful leave, the hand-over time of a
// planned leave and the takeover time after a member stops renewing.
func Measure(ctx context.Context, cfg MeasureConfig) (Measured, error) {
	cfg = measureDefaults(cfg)
	m := &measurer{cfg: cfg, runs: map[string][]run{}, nodes: map[string]*measured{}}
	m.pcfg = DefaultConfig()
	m.pcfg.Key = fmt.Sprintf("%s/%d", cfg.Group, time.Now().UnixNano())
	m.pcfg.Partitions, m.pcfg.TTL = cfg.Partitions, cfg.TTL
	m.pcfg.Margin = cfg.TTL / 10
	if cfg.Steady == 0 {
		safe := m.pcfg.SafeLease(cfg.TTL)
		cfg.Steady = 10 * min(m.pcfg.EffectiveRenewInterval(), safe/3)
		m.cfg.Steady = cfg.Steady
	}
	defer m.stopAll()
	res := Measured{Partitions: cfg.Partitions, Members: cfg.Members, WritesPerSecond: -1}
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

// Scaling is a Measure run beside a reference run with fewer partitions:
// renewal cost must not grow with P.
type Scaling struct {
	Measured
	// ReferencePartitions is P of the reference run; 0 when none ran.
	ReferencePartitions int
	// ReferenceWritesPerSecond is the reference run's steady-state writes.
	ReferenceWritesPerSecond float64
	// WritesRatio is WritesPerSecond / ReferenceWritesPerSecond: 0 when
	// not measured.
	WritesRatio float64
}

// MeasureScaling runs Measure with reference partitions (when reference is
// positive and cfg.Writes is set), then with cfg, and returns the second
// run's figures with the ratio of their steady-state writes. Progress, if
// not nil, gets a line as each run begins.
func MeasureScaling(ctx context.Context, cfg MeasureConfig, reference int, progress io.Writer) (Scaling, error) {
	cfg = measureDefaults(cfg)
	if progress == nil {
		progress = io.Discard
	}
	var s Scaling
	if reference > 0 && cfg.Writes != nil {
		ref := cfg
		ref.Partitions = reference
		fmt.Fprintf(progress, "bench: reference run, P=%d, N=%d\n", ref.Partitions, ref.Members)
		res, err := Measure(ctx, ref)
		if err != nil {
			return s, fmt.Errorf("reference P=%d: %w", reference, err)
		}
		s.ReferencePartitions, s.ReferenceWritesPerSecond = reference, res.WritesPerSecond
	}
	fmt.Fprintf(progress, "bench: P=%d, N=%d, TTL %s\n", cfg.Partitions, cfg.Members, cfg.TTL)
	res, err := Measure(ctx, cfg)
	s.Measured = res
	if err != nil {
		return s, err
	}
	if s.ReferenceWritesPerSecond > 0 && res.WritesPerSecond >= 0 {
		s.WritesRatio = res.WritesPerSecond / s.ReferenceWritesPerSecond
	}
	return s, nil
}

func measureDefaults(cfg MeasureConfig) MeasureConfig {
	if cfg.Group == "" {
		cfg.Group = "bench/partitions"
	}
	if cfg.Partitions == 0 {
		cfg.Partitions = 10000
	}
	if cfg.Members == 0 {
		cfg.Members = 10
	}
	if cfg.TTL == 0 {
		cfg.TTL = 10 * time.Second
	}
	return cfg
}

// Report writes m as a table of figures beside the targets.
// writesRatio is writes(P)/writes(P small) from a second Measure, or 0 when
// not measured.
func (m Measured) Report(w io.Writer, ttl time.Duration, writesRatio float64) {
	fmt.Fprintf(w, "%-44s %-22s %s\n", "figure", "target", "measured")
	for _, f := range m.Figures(ttl, writesRatio) {
		fmt.Fprintf(w, "%-44s %-22s %s\n", f.What, f.Target, f.Measured)
	}
}

// A Figure is one line of a Measured's report.
type Figure struct {
	What, Target, Measured string
}

// Figures returns m's figures beside their targets (Target is empty for a
// figure without one), as Report prints them.
func (m Measured) Figures(ttl time.Duration, writesRatio float64) []Figure {
	var out []Figure
	row := func(what, target, got string) { out = append(out, Figure{what, target, got}) }
	row(fmt.Sprintf("balance max/mean (P=%d, N=%d)", m.Partitions, m.Members), "≤ 1.001 (max ≤ ⌈P/N⌉)", fmt.Sprintf("%.4f (max %d, cap %d)", m.Imbalance, m.MaxOwned, m.Cap))
	row("cold start to fully owned", "< 5s", m.ColdStart.Round(time.Millisecond).String())
	if m.WritesPerSecond >= 0 {
		row("coordinator writes/s, steady state", "", fmt.Sprintf("%.2f", m.WritesPerSecond))
	}
	if writesRatio > 0 {
		row("writes(P) / writes(P=100)", "≤ 1.1", fmt.Sprintf("%.3f", writesRatio))
	}
	row("CPU per member, steady state", "< 5% of a core", fmt.Sprintf("%.2f%%", 100*m.CPUPerMember))
	row("moves on a join", fmt.Sprintf("≤ %.0f (1.1·P/N)", 1.1*float64(m.Partitions)/float64(m.Members)), fmt.Sprint(m.JoinMoves))
	row("moves on a graceful leave", fmt.Sprintf("≤ %.0f (1.1·P/N)", 1.1*float64(m.Partitions)/float64(m.Members+1)), fmt.Sprint(m.LeaveMoves))
	row("planned leave hand-over p99 (max)", "≤ 1s", fmt.Sprintf("%s (%s)", m.LeaveP99.Round(time.Millisecond), m.LeaveMax.Round(time.Millisecond)))
	row("crash takeover p99 (max)", fmt.Sprintf("≤ TTL+1s = %s", ttl+time.Second), fmt.Sprintf("%s (%s)", m.CrashP99.Round(time.Millisecond), m.CrashMax.Round(time.Millisecond)))
	row("partitions re-run with a token not greater", "0", fmt.Sprint(m.StaleTokens))
	return out
}
