package monitor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/prom"
)

// Defaults of Config.
const (
	DefaultPoll    = 250 * time.Millisecond
	DefaultHistory = 100
)

// Config says what a Monitor shows and where it looks.
type Config struct {
	// Coordinator is polled for the keys shown. Required.
	Coordinator tenure.Coordinator
	// Keys are the keys shown. When empty, every key under Prefix is
	// shown, which needs a coordinator that is a tenure.Lister, unless
	// PartitionsOnly is set.
	Keys []string
	// PartitionsOnly shows no keys, only the partition tables (a member
	// of a partition group, whose keys are its partitions).
	PartitionsOnly bool
	// Prefix selects the keys shown when Keys is empty ("" for all).
	Prefix string
	// Identity is this instance's holder identity ("name#instance"), or ""
	// for an instance that only observes (tenure server).
	Identity string
	// Metrics receives what the Monitor observes and what an Elector
	// reports through it. Required.
	Metrics *prom.Metrics
	// Gatherer is served on /metrics. Required.
	Gatherer prometheus.Gatherer
	// Health is /health's check; nil answers 200 while the process runs.
	Health func(ctx context.Context) error
	// Leading answers /leader for an instance without an Elector (an etcd
	// member: whether it leads raft; a partition group's member: whether
	// it owns a partition); nil means whether this instance holds a live
	// term on any key. With an Identity, it also makes Status.Role leader.
	Leading func() bool
	// Partitions reads the partition tables shown on the page and in
	// /status, at every poll (see partition.ReadTable), given the live
	// grants on the keys shown that the poll has just read; nil shows
	// none.
	Partitions func(ctx context.Context, grants []tenure.Grant) ([]partition.Table, error)
	// Poll is how often the coordinator is read; DefaultPoll when zero.
	Poll time.Duration
	// History is how many transitions are kept; DefaultHistory when zero.
	History int
	// Logger gets one line per transition of another holder; nil
	// discards.
	Logger *slog.Logger
}

// Monitor keeps the view that the endpoints serve. It is a tenure.Metrics:
// set it as the Config.Metrics of this instance's Elector. Create it with
// New and call Run.
type Monitor struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	keys   map[string]*view
	own    map[string]*tenure.Term // live terms of this instance
	last   map[string]*tenure.Term // the latest term of each key, live or not
	events []Event                 // oldest first, at most cfg.History
	parts  partView                // the partition tables
	err    error                   // of the last poll
	polled time.Time
}

// view is what the Monitor last saw of one key.
type view struct {
	grant     tenure.Grant
	held      bool
	leftKnown bool      // grant.TTL is the time left (read by List), not the TTL granted
	seenAt    time.Time // when grant.TTL was read
}

var _ tenure.Metrics = (*Monitor)(nil)

// New checks cfg and returns a Monitor.
func New(cfg Config) (*Monitor, error) {
	var errs []error
	if cfg.Coordinator == nil {
		errs = append(errs, errors.New("monitor: Config.Coordinator is nil"))
	}
	if cfg.Metrics == nil {
		errs = append(errs, errors.New("monitor: Config.Metrics is nil"))
	}
	if cfg.Gatherer == nil {
		errs = append(errs, errors.New("monitor: Config.Gatherer is nil"))
	}
	if cfg.Poll < 0 || cfg.History < 0 {
		errs = append(errs, fmt.Errorf("monitor: Config.Poll (%s) and Config.History (%d) must not be negative", cfg.Poll, cfg.History))
	}
	if err := tenure.ValidatePrefix(cfg.Prefix); err != nil {
		errs = append(errs, fmt.Errorf("monitor: Config.Prefix: %w", err))
	}
	for _, k := range cfg.Keys {
		if err := tenure.ValidateKey(k); err != nil {
			errs = append(errs, fmt.Errorf("monitor: Config.Keys: %w", err))
		}
	}
	if _, ok := cfg.Coordinator.(tenure.Lister); !ok && len(cfg.Keys) == 0 && !cfg.PartitionsOnly && cfg.Coordinator != nil {
		errs = append(errs, errors.New("monitor: Config.Keys is empty and the coordinator cannot list keys under Config.Prefix"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", tenure.ErrInvalidConfig, err)
	}
	if cfg.Poll == 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.History == 0 {
		cfg.History = DefaultHistory
	}
	m := &Monitor{
		cfg: cfg, log: cfg.Logger,
		keys: make(map[string]*view), own: make(map[string]*tenure.Term), last: make(map[string]*tenure.Term),
		parts: partView{unowned: make(map[string]time.Time)},
	}
	if m.log == nil {
		m.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for _, k := range cfg.Keys {
		m.keys[k] = &view{grant: tenure.Grant{Key: k}}
	}
	return m, nil
}

// Run reads the coordinator every Config.Poll until ctx ends, and returns
// ctx's error. A failed read is shown in /status and retried at the next
// poll.
func (m *Monitor) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.Poll)
	defer t.Stop()
	for {
		m.poll(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// poll reads the keys once and records what changed.
func (m *Monitor) poll(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(4*m.cfg.Poll, 2*time.Second))
	defer cancel()
	grants, listed, err := m.read(ctx)
	var partErr error
	if err == nil {
		partErr = m.pollPartitions(ctx, grants)
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.err, m.polled = cmp.Or(err, partErr), now
	if err != nil {
		return
	}
	held := make(map[string]bool, len(grants))
	for _, g := range grants {
		held[g.Key] = true
		m.seenLocked(g, listed, now)
	}
	for k, v := range m.keys {
		if v.held && !held[k] {
			m.goneLocked(k, v, now)
		}
	}
}

// read returns the live grants on the keys shown, and whether they were
// listed (their TTL is the time left on their lease).
func (m *Monitor) read(ctx context.Context) ([]tenure.Grant, bool, error) {
	l, canList := m.cfg.Coordinator.(tenure.Lister)
	if m.cfg.PartitionsOnly && len(m.cfg.Keys) == 0 {
		return nil, false, nil
	}
	if len(m.cfg.Keys) == 0 {
		gs, err := l.List(ctx, m.cfg.Prefix)
		return gs, true, err
	}
	var out []tenure.Grant
	for _, k := range m.cfg.Keys {
		if canList {
			gs, err := l.List(ctx, k)
			if errors.Is(err, prom.ErrNotSupported) {
				canList = false // an instrumented coordinator that cannot list
			} else if err != nil {
				return nil, false, err
			}
			if canList {
				if i := slices.IndexFunc(gs, func(g tenure.Grant) bool { return g.Key == k }); i >= 0 {
					out = append(out, gs[i])
				}
				continue
			}
		}
		g, ok, err := m.cfg.Coordinator.Leader(ctx, k)
		if err != nil {
			return nil, false, err
		}
		if ok {
			out = append(out, g)
		}
	}
	return out, canList, nil
}

// seenLocked records that g is live now; listed says whether g.TTL is the
// time left.
func (m *Monitor) seenLocked(g tenure.Grant, listed bool, now time.Time) {
	v := m.keys[g.Key]
	if v == nil {
		v = &view{}
		m.keys[g.Key] = v
	}
	if v.held && v.grant.Token != g.Token {
		// Taken over between two polls: the old grant ended first.
		m.endedLocked(g.Key, v, now)
	}
	if (!v.held || v.grant.Token != g.Token) && g.Holder != m.cfg.Identity {
		m.observedLocked(Event{At: now, Key: g.Key, Token: g.Token, Reason: ReasonAcquired}, g.Holder)
	}
	v.grant, v.held, v.leftKnown, v.seenAt = g, true, listed, now
	m.cfg.Metrics.ObserveLeader(g.Key, g, true)
}

// goneLocked records that key is free: the grant in v is gone.
func (m *Monitor) goneLocked(key string, v *view, now time.Time) {
	m.endedLocked(key, v, now)
	v.held = false
	m.cfg.Metrics.ObserveLeader(key, tenure.Grant{Key: key}, false)
}

// endedLocked records the end of the grant in v, unless it was this
// instance's (whose end is recorded with its true reason): released when
// it went with time left on its lease, expired otherwise.
func (m *Monitor) endedLocked(key string, v *view, now time.Time) {
	if v.grant.Holder != m.cfg.Identity {
		// etcd reports whole seconds left: allow one more, and a poll.
		reason := ReasonEnded
		switch left, ok := v.left(now); {
		case !ok:
		case left > m.cfg.Poll+time.Second:
			reason = ReasonReleased
		default:
			reason = ReasonExpired
		}
		m.observedLocked(Event{At: now, Key: key, Token: v.grant.Token, Reason: reason}, v.grant.Holder)
	}
}

// observedLocked records and logs a transition of another holder.
func (m *Monitor) observedLocked(ev Event, holder string) {
	ev.Holder, ev.Instance = tenure.SplitIdentity(holder)
	ev.Source = SourceObserved
	m.addLocked(ev)
	m.log.Info("leadership", "key", ev.Key, "holder", holder, "token", ev.Token, "reason", ev.Reason, "source", ev.Source)
}

// addLocked appends ev to the history, dropping the oldest beyond
// Config.History.
func (m *Monitor) addLocked(ev Event) {
	m.events = append(m.events, ev)
	if over := len(m.events) - m.cfg.History; over > 0 {
		m.events = slices.Delete(m.events, 0, over)
	}
}

// left is the lease left on v's grant at now, counted down from the last
// read; ok is false when the coordinator did not say (it cannot list).
func (v *view) left(now time.Time) (left time.Duration, ok bool) {
	if !v.held || !v.leftKnown {
		return 0, v.leftKnown
	}
	return max(v.grant.TTL-now.Sub(v.seenAt), 0), true
}
