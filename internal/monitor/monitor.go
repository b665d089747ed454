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
	"github.com/tenure-dev/tenure/internal/timerwait"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/prom"
)

// Defaults of Config.
const (
	DefaultPoll       = 250 * time.Millisecond
	DefaultHistory    = 100
	DefaultStatusRows = 100
	DefaultMoveWindow = 2 * time.Minute
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
	// StatusRows is how many rows of each partition table /status
	// carries, the ones to look at first (unowned, then recently moved,
	// then by index); /status/partitions pages through the rest.
	// DefaultStatusRows when zero.
	StatusRows int
	// MoveWindow is how long a partition that got a new owner counts as
	// recently moved; DefaultMoveWindow when zero.
	MoveWindow time.Duration
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
	polled time.Time               // when the last poll ended
	readAt time.Time               // when the last successful read began
	every  time.Duration           // how often the coordinator is read: Config.Poll, or more when reads are slow
}

// view is what the Monitor last saw of one key.
type view struct {
	grant   tenure.Grant
	held    bool
	listed  bool      // the reads say the time left on the lease (a tenure.Lister)
	lease   lease     // of grant, from the reads since it was first seen
	ttlRead bool      // the coordinator was asked the TTL granted to grant
	seenAt  time.Time // when the last read that saw grant began
	ended   time.Time // when the grant before it ended, as recorded
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
	if cfg.StatusRows < 0 || cfg.MoveWindow < 0 {
		errs = append(errs, fmt.Errorf("monitor: Config.StatusRows (%d) and Config.MoveWindow (%s) must not be negative", cfg.StatusRows, cfg.MoveWindow))
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
	cfg.StatusRows = cmp.Or(cfg.StatusRows, DefaultStatusRows)
	cfg.MoveWindow = cmp.Or(cfg.MoveWindow, DefaultMoveWindow)
	m := &Monitor{
		cfg: cfg, log: cfg.Logger, every: cfg.Poll,
		keys: make(map[string]*view), own: make(map[string]*tenure.Term), last: make(map[string]*tenure.Term),
		parts: partView{groups: make(map[string]*groupView)},
	}
	if m.log == nil {
		m.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for _, k := range cfg.Keys {
		m.keys[k] = &view{grant: tenure.Grant{Key: k}}
	}
	return m, nil
}

// Pacing of the reads: after a read that took d, the next begins at least
// pollShare·d after it began, so that a large table (100,000 partitions)
// is not read back to back; but never more than maxPollSpread after it
// (or Config.Poll, when that is more), so that a slow or failed read
// leaves the page blind for that long at most.
const (
	pollShare     = 5
	maxPollSpread = 2 * time.Second
)

// Run reads the coordinator every Config.Poll, or less often when a read
// takes more than a fifth of that (see pollShare), until ctx ends, and
// returns ctx's error. A failed read is shown in /status and retried at
// the next poll.
func (m *Monitor) Run(ctx context.Context) error {
	for {
		start := time.Now()
		m.poll(ctx)
		took := time.Since(start)
		every := max(m.cfg.Poll, min(pollShare*took, maxPollSpread))
		m.mu.Lock()
		m.every = every
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(timerwait.Delay(every - took)):
		}
	}
}

// poll reads the keys once and records what changed.
func (m *Monitor) poll(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(4*m.cfg.Poll, 2*time.Second))
	defer cancel()
	start := time.Now()
	grants, listed, err := m.read(ctx)
	var partErr error
	var ttls map[string]time.Duration
	if err == nil {
		partErr = m.pollPartitions(ctx, grants)
		grants = m.withoutPartitions(grants)
		ttls = m.grantedTTLs(ctx, grants, listed)
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
		m.seenLocked(g, ttls, listed, start, now)
	}
	for k, v := range m.keys {
		if v.held && !held[k] {
			m.goneLocked(k, v, start, now)
		}
	}
	m.readAt = start
}

// maxTTLReads is how many grants a poll asks the TTL granted of, at most;
// the others are asked at the next polls.
const maxTTLReads = 64

// grantedTTLs asks the coordinator for the TTL granted to the grants of gs
// whose TTL it was not asked yet, when gs were listed (a listed grant's
// TTL is the time left): one Leader call each, at most maxTTLReads. A
// failed call is tried again at the next poll; meanwhile the TTL is what
// the reads show (see lease).
func (m *Monitor) grantedTTLs(ctx context.Context, gs []tenure.Grant, listed bool) map[string]time.Duration {
	if !listed {
		return nil
	}
	var ask []tenure.Grant
	m.mu.Lock()
	for _, g := range gs {
		if v := m.keys[g.Key]; (v == nil || !v.held || v.grant.Token != g.Token || !v.ttlRead) && len(ask) < maxTTLReads {
			ask = append(ask, g)
		}
	}
	m.mu.Unlock()
	out := make(map[string]time.Duration, len(ask))
	for _, g := range ask {
		if l, ok, err := m.cfg.Coordinator.Leader(ctx, g.Key); err == nil && ok && l.Token == g.Token {
			out[g.Key] = l.TTL
		}
	}
	return out
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

// seenLocked records that g was live at the read begun at start; ttls has
// the TTL granted of the grants whose TTL the poll asked; listed says
// whether g.TTL is the time left.
func (m *Monitor) seenLocked(g tenure.Grant, ttls map[string]time.Duration, listed bool, start, now time.Time) {
	v := m.keys[g.Key]
	if v == nil {
		v = &view{}
		m.keys[g.Key] = v
	}
	fresh := !v.held || v.grant.Token != g.Token
	if v.held && fresh {
		// Taken over between two reads: the old grant ended first.
		m.endedLocked(g.Key, v, start, now)
	}
	if fresh {
		v.lease, v.ttlRead = lease{}, false
	}
	v.grant, v.held, v.listed, v.seenAt = g, true, listed, start
	if ttl, ok := ttls[g.Key]; ok {
		v.lease.granted(ttl)
		v.ttlRead = true
	}
	if listed {
		v.lease.read(start, g.TTL)
	} else {
		v.lease.granted(g.TTL) // Leader's TTL: as granted, or the time left
	}
	if fresh && g.Holder != m.cfg.Identity {
		m.observedLocked(Event{At: m.acquiredAtLocked(v, now), Key: g.Key, Token: g.Token, Reason: ReasonAcquired}, g.Holder)
	}
	m.cfg.Metrics.ObserveLeader(g.Key, g, true)
}

// acquiredAtLocked is when the grant in v, just seen for the first time,
// was most likely made: halfway between the start of the read before this
// one (which did not see it), or the end of the grant before it when that
// is later, and now. (Not when its lease began: etcd grants a candidate's
// lease ahead of the key.) At the first read, it is now: when it was seen.
func (m *Monitor) acquiredAtLocked(v *view, now time.Time) time.Time {
	if m.readAt.IsZero() {
		return now
	}
	lo := m.readAt
	if v.ended.After(lo) {
		lo = v.ended
	}
	return clampTime(lo.Add(now.Sub(lo)/2), lo, now)
}

// goneLocked records that key was free at the read begun at start: the
// grant in v is gone.
func (m *Monitor) goneLocked(key string, v *view, start, now time.Time) {
	m.endedLocked(key, v, start, now)
	v.held = false
	m.cfg.Metrics.ObserveLeader(key, tenure.Grant{Key: key}, false)
}

// endedLocked records the end of the grant in v, found gone by the read
// begun at start, unless it was this instance's (whose end is recorded
// with its true reason): released when it went with time left on its
// lease, stamped halfway between the last read that saw it and now;
// expired when its lease ran out, stamped when it ran out; ended, stamped
// now, when the coordinator does not say the time left.
func (m *Monitor) endedLocked(key string, v *view, start, now time.Time) {
	at, reason := now, ReasonEnded
	// etcd reports whole seconds left: allow one more, and a poll.
	switch left, ok := v.lease.left(start); {
	case !ok:
	case left > m.every+leftResolution:
		at, reason = v.seenAt.Add(now.Sub(v.seenAt)/2), ReasonReleased
	default:
		// Not clamped to the reads that saw it: etcd lists a lease that ran
		// out, with 0 s left, until it collects it.
		at, reason = clampTime(v.lease.end, v.lease.end, now), ReasonExpired
	}
	v.ended = at
	if v.grant.Holder != m.cfg.Identity {
		m.observedLocked(Event{At: at, Key: key, Token: v.grant.Token, Reason: reason}, v.grant.Holder)
	}
}

// clampTime is t moved into [lo, hi].
func clampTime(t, lo, hi time.Time) time.Time {
	if t.Before(lo) {
		t = lo
	}
	if t.After(hi) {
		t = hi
	}
	return t
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
