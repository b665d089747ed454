package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"syscall"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

func (m *measurer) fn(ctx context.Context, p partition.Partition, t *tenure.Term) error {
	m.mu.Lock()
	m.runs[p.Key] = append(m.runs[p.Key], run{member: t.Holder(), token: t.Token(), at: time.Now()})
	m.mu.Unlock()
	<-ctx.Done()
	return nil
}

func (m *measurer) start(ctx context.Context, name string) error {
	c, err := m.o.NewCoordinator(ctx)
	if err != nil {
		return fmt.Errorf("bench partitions: coordinator for %s: %w", name, err)
	}
	cfg := m.pcfg
	cfg.Holder, cfg.Instance = name, "1"
	g, err := partition.New(c, cfg)
	if err != nil {
		_ = c.Close()
		return err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n := &measured{coord: c, g: g, cancel: cancel, done: make(chan error, 1)}
	go func() { n.done <- g.Run(rctx, m.fn) }()
	m.nodes[name] = n
	return nil
}

// stop ends member name: gracefully, or by closing its coordinator first
// (crash: it cannot renew or leave).
func (m *measurer) stop(name string, crash bool) {
	n := m.nodes[name]
	delete(m.nodes, name)
	if crash {
		_ = n.coord.Close()
	}
	n.cancel()
	<-n.done
	_ = n.coord.Close()
}

func (m *measurer) stopAll() {
	for name := range m.nodes {
		m.stop(name, false)
	}
}

// owners returns who runs each partition now, and the most one runs.
func (m *measurer) owners() (map[string]string, int) {
	out := make(map[string]string, m.o.Partitions)
	most := 0
	for name, n := range m.nodes {
		owned := n.g.Snapshot().Owned
		most = max(most, len(owned))
		for _, o := range owned {
			out[o.Partition.Key] = name
		}
	}
	return out, most
}

// settle waits until every partition runs and the runs are settled: the
// assignment members compute from them (Rebalance) moves nothing. It polls
// every 10ms.
func (m *measurer) settle(ctx context.Context, what string) (map[string]string, int, error) {
	limit := (m.o.Partitions + len(m.nodes) - 1) / len(m.nodes)
	var ids []string
	for _, n := range m.nodes {
		ids = append(ids, n.g.Identity())
	}
	deadline := time.Now().Add(3*m.o.TTL + 30*time.Second)
	for {
		own, most := m.owners()
		if len(own) == m.o.Partitions && m.isSettled(own, ids) {
			return own, most, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, 0, fmt.Errorf("bench partitions: %s: %d of %d partitions run, most %d (cap %d)", what, len(own), m.o.Partitions, most, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (m *measurer) coldStart(ctx context.Context, res *PartitionsResult) error {
	start := time.Now()
	for i := range m.o.Members {
		if err := m.start(ctx, fmt.Sprintf("member-%02d", i)); err != nil {
			return err
		}
	}
	_, most, err := m.settle(ctx, "cold start")
	if err != nil {
		return err
	}
	res.ColdStart = time.Since(start)
	res.MaxOwned, res.Cap = most, (m.o.Partitions+m.o.Members-1)/m.o.Members
	res.Imbalance = float64(most) / (float64(m.o.Partitions) / float64(m.o.Members))
	return nil
}

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (m *measurer) steady(ctx context.Context, res *PartitionsResult) error {
	time.Sleep(m.o.TTL / 2) // let claims' aftermath pass
	var w0, w1 int64
	var err error
	if m.o.Writes != nil {
		if w0, err = m.o.Writes(ctx); err != nil {
			return fmt.Errorf("bench partitions: count writes: %w", err)
		}
	}
	c0, t0 := cpuTime(), time.Now()
	time.Sleep(m.o.Steady)
	c1, elapsed := cpuTime(), time.Since(t0)
	if m.o.Writes != nil {
		if w1, err = m.o.Writes(ctx); err != nil {
			return fmt.Errorf("bench partitions: count writes: %w", err)
		}
		res.WritesPerSecond = float64(w1-w0) / elapsed.Seconds()
	}
	res.CPUPerMember = (c1 - c0).Seconds() / elapsed.Seconds() / float64(m.o.Members)
	return nil
}

func moved(before, after map[string]string) int {
	n := 0
	for k, v := range before {
		if after[k] != v {
			n++
		}
	}
	return n
}

func (m *measurer) join(ctx context.Context, res *PartitionsResult) error {
	before, _ := m.owners()
	if err := m.start(ctx, fmt.Sprintf("member-%02d", m.o.Members)); err != nil {
		return err
	}
	after, _, err := m.settle(ctx, "join")
	res.JoinMoves = moved(before, after)
	return err
}

// handover measures how long after at the partitions owned by name in
// before began a new term elsewhere, and counts tokens that did not grow.
// A claim shows in a member's snapshot a moment before its term's function
// records the run, so it waits (up to the settle limit) until every one of
// those partitions has a run that began after at.
// leaver is the departed member's identity: a run of its own that its
// snapshot showed a moment before at is not a hand-over.
func (m *measurer) handover(ctx context.Context, before map[string]string, name, leaver string, at time.Time) (lat []time.Duration, p99, most time.Duration, stale int, err error) {
	deadline := time.Now().Add(3*m.o.TTL + 30*time.Second)
	for {
		lat, stale, missing := m.handoverRuns(before, name, leaver, at)
		if missing == 0 {
			slices.Sort(lat)
			if len(lat) == 0 {
				return nil, 0, 0, stale, nil
			}
			return lat, lat[(len(lat)*99+99)/100-1], lat[len(lat)-1], stale, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, 0, 0, stale, fmt.Errorf("bench partitions: %d partitions of %s ran nowhere else by %s", missing, name, deadline.Format(time.TimeOnly))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// handoverRuns returns, for the partitions owned by name in before, how long
// after at each first ran again, how many did so without a greater token
// than their last run before at, and how many have not run again yet.
func (m *measurer) handoverRuns(before map[string]string, name, leaver string, at time.Time) (lat []time.Duration, stale, missing int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, owner := range before {
		if owner != name {
			continue
		}
		var prev, next *run
		for i := range m.runs[key] {
			r := &m.runs[key][i]
			if !r.at.After(at) || r.member == leaver {
				if r.member == leaver {
					prev = r
				}
				continue
			}
			if next == nil {
				next = r
			}
		}
		if next == nil {
			missing++
			continue
		}
		if prev != nil && next.token <= prev.token {
			stale++
		}
		lat = append(lat, next.at.Sub(at))
	}
	return lat, stale, missing
}

func (m *measurer) leave(ctx context.Context, res *PartitionsResult) error {
	before, _ := m.owners()
	leaver := m.nodes["member-00"].g.Identity()
	at := time.Now()
	m.stop("member-00", false)
	after, _, err := m.settle(ctx, "planned leave")
	if err != nil {
		return err
	}
	res.LeaveMoves = moved(before, after)
	var stale int
	res.LeaveTimes, res.LeaveP99, res.LeaveMax, stale, err = m.handover(ctx, before, "member-00", leaver, at)
	res.StaleTokens += stale
	return err
}

func (m *measurer) crash(ctx context.Context, res *PartitionsResult) error {
	before, _ := m.owners()
	leaver := m.nodes["member-01"].g.Identity()
	at := time.Now()
	m.stop("member-01", true)
	if _, _, err := m.settle(ctx, "crash"); err != nil {
		return err
	}
	var stale int
	var err error
	res.CrashTimes, res.CrashP99, res.CrashMax, stale, err = m.handover(ctx, before, "member-01", leaver, at)
	res.StaleTokens += stale
	return err
}

// isSettled reports whether own (partition key → member name) is a fixed
// point of Rebalance over the members ids.
func (m *measurer) isSettled(own map[string]string, ids []string) bool {
	owners := make(map[string]string, len(own))
	for _, n := range m.pcfg.PartitionNames() {
		if name, ok := own[tenure.PartitionKey(m.pcfg.Key, n)]; ok {
			owners[n] = m.nodes[name].g.Identity()
		}
	}
	return maps.Equal(partition.Rebalance(m.pcfg.PartitionNames(), ids, owners), owners)
}
