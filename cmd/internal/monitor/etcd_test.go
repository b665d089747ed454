package monitor_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/cmd/internal/monitor"
	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/partition"
)

// waitFor polls cond until it holds, failing after limit (a generous
// liveness bound on a loaded machine).
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startEtcd starts an embedded etcd member for the test and returns a
// coordinator on it.
func startEtcd(t *testing.T) *etcd.Coordinator {
	t.Helper()
	urls, err := embedded.FreeLocalURLs(2)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := embedded.Start(context.Background(), embedded.Config{Dir: t.TempDir(), ClientURLs: urls[:1], PeerURLs: urls[1:]})
	if err != nil {
		t.Fatalf("embedded.Start() error = %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	c, err := etcd.Dial(context.Background(), etcd.Config{Endpoints: srv.Endpoints()})
	if err != nil {
		t.Fatalf("etcd.Dial() error = %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// On etcd, which lists keys with the lease left, an observer tells a
// release (the key went with lease left) from an expiry (it went when the
// lease ran out), and times the gap without a holder.
func TestObservedReasonsOnEtcd(t *testing.T) {
	ctx := context.Background()
	c := startEtcd(t)
	mon := newMonitor(t, c, monitor.Config{Prefix: "t/", Poll: 100 * time.Millisecond})
	h := mon.Handler()
	seen := func(reason, holder string) func() bool {
		return func() bool {
			return slices.ContainsFunc(mon.Status().Transitions, func(e monitor.Event) bool {
				return e.Reason == reason && e.Holder == holder && e.Source == monitor.SourceObserved
			})
		}
	}

	g, err := c.Acquire(ctx, "t/a", "x#1", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "acquired by x", seen(monitor.ReasonAcquired, "x"))
	if err := c.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "release by x", seen(monitor.ReasonReleased, "x"))

	if _, err := c.Acquire(ctx, "t/b", "y#2", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "acquired by y", seen(monitor.ReasonAcquired, "y"))
	waitFor(t, 2*time.Second+5*time.Second, "expiry of y", seen(monitor.ReasonExpired, "y"))
	if slices.ContainsFunc(mon.Status().Transitions, func(e monitor.Event) bool { return e.Holder == "x" && e.Reason == monitor.ReasonExpired }) {
		t.Error("x's release was also reported as an expiry")
	}

	if _, err := c.Acquire(ctx, "t/a", "z#3", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "acquired by z", seen(monitor.ReasonAcquired, "z"))
	_, body := get(t, h, "/metrics")
	for _, w := range []string{`tenure_leaderless_seconds_count{key="t/a"} 1`, `tenure_leader_info{holder="z",key="t/a"} 1`} {
		if !strings.Contains(body, w) {
			t.Errorf("/metrics without %s:\n%s", w, body)
		}
	}
	s := mon.Status()
	if len(s.Keys) != 2 || s.Keys[0].Key != "t/a" || s.Keys[0].Holder != "z" || s.Keys[1].Held {
		t.Errorf("/status keys = %+v; want t/a held by z, t/b free", s.Keys)
	}
	if s.Keys[0].TTLLeftMs == nil || *s.Keys[0].TTLLeftMs <= 20_000 {
		t.Errorf("t/a lease left = %v; want about 30s (listed)", s.Keys[0].TTLLeftMs)
	}
}

// Keys that are partitions of a group shown are shown in its table, not as
// keys, and their claims are not key transitions (a server lists every
// key under its prefix: a group of 100,000 partitions would otherwise be
// 100,000 keys).
func TestPartitionKeysNotKeys(t *testing.T) {
	ctx := context.Background()
	c := startEtcd(t)
	m, err := c.JoinGroup(ctx, "grp", "w#1", 30*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ClaimPartitions(ctx, m, []string{"0", "1", "2", "3"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "solo", "x#2", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	mon := newMonitor(t, c, monitor.Config{Poll: 100 * time.Millisecond,
		Partitions: func(ctx context.Context, _ []tenure.Grant) ([]partition.Table, error) {
			tb, err := partition.ReadTable(ctx, c, "grp", partition.Names(4))
			return []partition.Table{tb}, err
		}})
	waitFor(t, 5*time.Second, "the group and the key", func() bool {
		s := mon.Status()
		return len(s.Groups) == 1 && s.Groups[0].Owned == 4 && len(s.Keys) > 0
	})
	s := mon.Status()
	var keys, moved []string
	for _, k := range s.Keys {
		keys = append(keys, k.Key)
	}
	for _, e := range s.Transitions {
		moved = append(moved, e.Key)
	}
	if !slices.Equal(keys, []string{"solo"}) || !slices.Equal(moved, []string{"solo"}) {
		t.Errorf("/status keys %q, transitions of %q; want only solo", keys, moved)
	}
	if g := s.Groups[0].ByMember; len(g) != 1 || g[0].TTLMs == nil || *g[0].TTLMs != 30_000 || g[0].Renewing == nil || !*g[0].Renewing {
		t.Errorf("/status members = %+v; want w#1 with ttl_ms 30000, renewing", g)
	}
}
