package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"syscall"
	"time"

	"github.com/tenure-dev/tenure/partition"
)

// settle waits until every partition runs and the runs are settled: the
// assignment members compute from them (Rebalance) moves nothing. It counts
// the partitions running every 50ms, and compares them with the assignment
// (O(P)) at most every 500ms, once they all run; it gives up after
// PartitionsOptions.Limit with a *PhaseError.
func (m *measurer) settle(ctx context.Context, phase string) (map[string]string, int, error) {
	var ids []string
	for _, n := range m.nodes {
		ids = append(ids, n.g.Identity())
	}
	p := m.follow(phase)
	deadline := p.began.Add(m.o.Limit)
	var compared time.Time
	for {
		p.tick()
		if m.running.Load() == int64(m.o.Partitions) && time.Since(compared) >= 500*time.Millisecond {
			compared = time.Now()
			own, most := m.owners()
			if len(own) == m.o.Partitions && m.isSettled(own, ids) {
				p.done()
				return own, most, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, 0, p.fail(ctx)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// coldStart makes every member, then runs them all at once and measures
// the time until every partition runs, balanced.
func (m *measurer) coldStart(ctx context.Context, res *PartitionsResult) error {
	var ns []*measured
	for i := range m.o.Members {
		n, err := m.add(ctx, fmt.Sprintf("member-%02d", i))
		if err != nil {
			return err
		}
		ns = append(ns, n)
	}
	start := time.Now()
	for _, n := range ns {
		m.run(ctx, n)
	}
	_, most, err := m.settle(ctx, "cold start")
	if err != nil {
		return err
	}
	res.ColdStart = time.Since(start)
	res.ClaimsPerSecond = float64(m.o.Partitions) / res.ColdStart.Seconds()
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
	time.Sleep(max(m.o.TTL/2, m.o.WritesLag)) // let claims' aftermath pass, and be counted
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
// those partitions has a run that began after at, polling every 50ms.
// leaver is the departed member's identity: a run of its own that its
// snapshot showed a moment before at is not a hand-over.
func (m *measurer) handover(ctx context.Context, before map[string]string, name, leaver string, at time.Time) (lat []time.Duration, p99, most time.Duration, stale int, err error) {
	var keys []string // the leaver's partitions
	for key, owner := range before {
		if owner == name {
			keys = append(keys, key)
		}
	}
	deadline := time.Now().Add(m.o.Limit)
	for {
		lat, stale, missing := m.handoverRuns(keys, leaver, at)
		if missing == 0 {
			slices.Sort(lat)
			if len(lat) == 0 {
				return nil, 0, 0, stale, nil
			}
			return lat, lat[(len(lat)*99+99)/100-1], lat[len(lat)-1], stale, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, 0, 0, stale, fmt.Errorf("bench partitions: %d of %s's %d partitions ran nowhere else by %s", missing, name, len(keys), deadline.Format(time.TimeOnly))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// handoverRuns returns, for the partitions keys, how long after at each
// first ran again, how many did so without a greater token than their last
// run by leaver, and how many have not run again yet.
func (m *measurer) handoverRuns(keys []string, leaver string, at time.Time) (lat []time.Duration, stale, missing int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, key := range keys {
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
	names := m.pcfg.PartitionNames()
	for _, n := range names {
		if name, ok := own[partition.Key(m.pcfg.Key, n)]; ok {
			owners[n] = m.nodes[name].g.Identity()
		}
	}
	return maps.Equal(partition.Rebalance(names, ids, owners), owners)
}
