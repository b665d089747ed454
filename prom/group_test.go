package prom_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/partition/partitiontest"
	"github.com/tenure-dev/tenure/prom"
)

// An instrumented group coordinator (InstrumentGroup, or Instrument of one)
// is still a partition.Coordinator: a partition group runs on it, a partition held by another member is not
// an error, and the failed calls of a member cut off from the coordinator
// are counted under their operations.
func TestInstrumentKeepsGroupCoordinator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		m, err := prom.New(reg)
		if err != nil {
			t.Fatalf("prom.New() error = %v", err)
		}
		mem := memory.New()
		defer mem.Close()
		if c, ok := m.Instrument(mem).(partition.Coordinator); !ok {
			t.Fatalf("Instrument(%T) = %T; want a partition.Coordinator", mem, c)
		}
		gc := m.InstrumentGroup(mem)
		cfg := partition.DefaultConfig()
		cfg.Key, cfg.Partitions, cfg.Holder = "jobs", 4, "a"
		g, stop := partitiontest.RunMember(t, gc, cfg)
		ctx := t.Context()
		time.Sleep(cfg.TTL)
		if n := len(g.Snapshot().Owned); n != 4 {
			t.Fatalf("member owns %d partitions on the instrumented coordinator; want 4", n)
		}
		// Another member's claim of an owned partition is refused: an
		// outcome, not an error.
		other, err := gc.JoinGroup(ctx, "jobs", "b#1", cfg.TTL, 0)
		if err != nil {
			t.Fatalf("JoinGroup() error = %v", err)
		}
		rs, err := gc.ClaimPartitions(ctx, other, []string{"0"})
		if err != nil || len(rs) != 1 || !errors.Is(rs[0].Err, tenure.ErrHeld) {
			t.Fatalf("ClaimPartitions(owned) = %+v, %v; want one result with ErrHeld", rs, err)
		}
		if err := gc.LeaveGroup(ctx, other); err != nil {
			t.Fatalf("LeaveGroup() error = %v", err)
		}
		if got := opErrors(t, reg, "claim_partitions"); got != 0 {
			t.Errorf(`tenure_coordinator_errors_total{op="claim_partitions"} = %v after a refused claim; want 0`, got)
		}
		mem.Partition("a") // every call of member a fails now
		time.Sleep(cfg.TTL)
		mem.Heal("a")
		if got := opErrors(t, reg, "renew_member"); got < 1 {
			t.Errorf(`tenure_coordinator_errors_total{op="renew_member"} = %v after a partition of a TTL; want ≥ 1`, got)
		}
		if _, err := gc.GroupMembers(ctx, "/bad"); err == nil {
			t.Fatal(`GroupMembers("/bad") error = nil; want an invalid key`)
		}
		if got := opErrors(t, reg, "group_members"); got != 1 {
			t.Errorf(`tenure_coordinator_errors_total{op="group_members"} = %v; want 1`, got)
		}
		stop()
	})
}

// A coordinator that cannot run groups stays one when instrumented.
func TestInstrumentWithoutGroups(t *testing.T) {
	m, err := prom.New(prometheus.NewPedanticRegistry())
	if err != nil {
		t.Fatalf("prom.New() error = %v", err)
	}
	var c tenure.Coordinator = keysOnly{memory.New()}
	defer c.Close()
	if _, ok := m.Instrument(c).(partition.Coordinator); ok {
		t.Error("Instrument(a coordinator without groups) is a partition.Coordinator; want not")
	}
}

// keysOnly hides every capability of a coordinator but tenure.Coordinator.
type keysOnly struct{ tenure.Coordinator }

// opErrors is tenure_coordinator_errors_total{op} gathered from reg; 0
// when the series does not exist yet.
func opErrors(t *testing.T, reg prometheus.Gatherer, op string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather() error = %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "tenure_coordinator_errors_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "op" && l.GetValue() == op {
					return s.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// watchingGroup is the memory coordinator with a membership watch whose
// channel and error the test holds, to see that the wrapper hands them
// through.
type watchingGroup struct {
	*memory.Coordinator
	ch  chan struct{}
	err error
}

func (w watchingGroup) WatchMembers(context.Context, string) (<-chan struct{}, error) {
	return w.ch, w.err
}

// Instrumenting a coordinator that tells members of joins and leaves at
// once (etcd, PostgreSQL) keeps that: the wrapper is a
// partition.MembersWatcher that hands the coordinator's own watch through, and
// counts its failures, so a group on it watches instead of polling. The
// memory coordinator cannot watch, and the wrapper does not pretend it can.
func TestInstrumentKeepsMembersWatcher(t *testing.T) {
	cl, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://127.0.0.1:1"}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ec, err := etcd.New(cl)
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	reg := prometheus.NewPedanticRegistry()
	m, err := prom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Instrument(ec).(partition.MembersWatcher); !ok {
		t.Errorf("Instrument(etcd coordinator) is not a partition.MembersWatcher; want the watch kept")
	}
	mc := memory.New()
	defer mc.Close()
	if _, ok := m.Instrument(mc).(partition.MembersWatcher); ok {
		t.Errorf("Instrument(memory coordinator) is a partition.MembersWatcher; want not")
	}

	inner := watchingGroup{Coordinator: mc, ch: make(chan struct{}, 1)}
	w, ok := m.Instrument(inner).(partition.MembersWatcher)
	if !ok {
		t.Fatal("Instrument(a watching group) is not a partition.MembersWatcher")
	}
	if ch, err := w.WatchMembers(t.Context(), "g"); err != nil || ch != (<-chan struct{})(inner.ch) {
		t.Errorf("Instrument(g).WatchMembers() = %v, %v; want the coordinator's own watch", ch, err)
	}
	inner.err = errors.New("watch refused")
	w = m.Instrument(inner).(partition.MembersWatcher)
	if _, err := w.WatchMembers(t.Context(), "g"); !errors.Is(err, inner.err) {
		t.Errorf("Instrument(g).WatchMembers() error = %v; want the coordinator's", err)
	}
	if got := opErrors(t, reg, "watch_members"); got != 1 {
		t.Errorf("failed WatchMembers counted %v times; want 1", got)
	}
}
