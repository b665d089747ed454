package plant_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/plant"
	"github.com/tenure-dev/tenure/memory"
)

func config() tenure.Config {
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder, cfg.TTL, cfg.Margin, cfg.MaxDrift = "k", "h", 10*time.Second, time.Second, 0.01
	return cfg
}

// Each wrapper moves the elector's local deadline exactly as far as its bug
// would, and nothing else.
func TestWrap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		defer m.Close()
		cfg := config()
		ctx := context.Background()

		m.SetLatency("h", 100*time.Millisecond, 200*time.Millisecond)
		sent := time.Now()
		g, err := plant.Wrap(m, plant.ReplyDeadline, cfg).Acquire(ctx, "k", "h", cfg.TTL)
		if err != nil || g.Sent.Time().Sub(sent) != 300*time.Millisecond || g.TTL != cfg.TTL {
			t.Fatalf("reply-deadline Acquire() = %v (Sent %s after the send), %v; want Sent the 300ms round trip late", g, g.Sent.Time().Sub(sent), err)
		}
		m.HealAll()

		g, err = plant.Wrap(m, plant.NoMargin, cfg).Acquire(ctx, "k", "h", cfg.TTL)
		if err != nil {
			t.Fatal(err)
		}
		if got := timing.SafeLease(g.TTL, cfg.MaxDrift, cfg.Margin); got < cfg.TTL-time.Microsecond || got > cfg.TTL {
			t.Fatalf("no-margin: safe lease of the reported TTL = %s; want the whole TTL %s", got, cfg.TTL)
		}

		bad := plant.Wrap(m, plant.RenewAfterExpiry, cfg)
		time.Sleep(cfg.TTL + time.Second) // the grant expires
		if _, err := m.Renew(ctx, g); err == nil {
			t.Fatal("the real coordinator renewed an expired grant")
		}
		if r, err := bad.Renew(ctx, g); err != nil || r.Token != g.Token || !r.Sent.Time().Equal(time.Now()) {
			t.Fatalf("renew-after-expiry Renew() of an expired grant = %v, %v; want the old grant reported renewed now", r, err)
		}

		if plant.Wrap(m, "", cfg) != tenure.Coordinator(m) {
			t.Fatal("Wrap with no bug changed the coordinator")
		}
		if _, ok := bad, true; !ok {
			t.Fatal("a wrapped coordinator lost Watch: the elector would campaign by polling")
		}
	})
}

// Each group wrapper moves the membership's deadline (and so every owned
// partition's) as far as its bug would, and hands the real TTL back.
func TestWrapGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		defer m.Close()
		cfg := config()
		ctx := context.Background()

		m.SetLatency("h#1", 100*time.Millisecond, 200*time.Millisecond)
		rd := plant.WrapGroup(m, plant.ReplyDeadline, cfg)
		sent := time.Now()
		mem, err := rd.JoinGroup(ctx, "g", "h#1", cfg.TTL, 0)
		if err != nil || mem.Sent.Time().Sub(sent) != 300*time.Millisecond || mem.TTL != cfg.TTL {
			t.Fatalf("reply-deadline JoinGroup() = %v, %v; want Sent the 300ms round trip late", mem, err)
		}
		sent = time.Now()
		if r, err := rd.RenewMember(ctx, mem); err != nil || r.Sent.Time().Sub(sent) != 300*time.Millisecond {
			t.Fatalf("reply-deadline RenewMember() = %v, %v; want Sent the 300ms round trip late", r, err)
		}
		m.HealAll()

		nm := plant.WrapGroup(m, plant.NoMargin, cfg)
		mem, err = nm.JoinGroup(ctx, "g", "h#2", cfg.TTL, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := timing.SafeLease(mem.TTL, cfg.MaxDrift, cfg.Margin); got < cfg.TTL-time.Microsecond || got > cfg.TTL {
			t.Fatalf("no-margin: safe lease of the reported TTL = %s; want the whole TTL %s", got, cfg.TTL)
		}
		if res, err := nm.ClaimPartitions(ctx, mem, []string{"0"}); err != nil || res[0].Err != nil || res[0].Grant.TTL != cfg.TTL {
			t.Fatalf("no-margin ClaimPartitions() = %v, %v; want a grant with the real TTL %s", res, err, cfg.TTL)
		}

		bad := plant.WrapGroup(m, plant.RenewAfterExpiry, cfg)
		mem, err = bad.JoinGroup(ctx, "g", "h#3", cfg.TTL, 0)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(cfg.TTL + time.Second) // the membership expires
		if _, err := m.RenewMember(ctx, mem); !errors.Is(err, tenure.ErrLost) {
			t.Fatalf("the real coordinator renewed an expired membership: %v", err)
		}
		if r, err := bad.RenewMember(ctx, mem); err != nil || r.Epoch != mem.Epoch {
			t.Fatalf("renew-after-expiry RenewMember() of an expired membership = %v, %v; want it reported renewed", r, err)
		}
		owned := []tenure.Grant{{Key: "g/0", Holder: "h#3", Token: 1}}
		if _, err := m.CheckPartitions(ctx, mem, owned); !errors.Is(err, tenure.ErrLost) {
			t.Fatalf("the real coordinator checked the partitions of an expired membership: %v", err)
		}
		if lost, err := bad.CheckPartitions(ctx, mem, owned); err != nil || len(lost) != 0 {
			t.Fatalf("renew-after-expiry CheckPartitions() of an expired membership = %v, %v; want nothing lost", lost, err)
		}
		if plant.WrapGroup(m, plant.NoToken, cfg) != plant.Group(m) {
			t.Fatal("WrapGroup with the writer's bug changed the coordinator")
		}
	})
}

// watchingGroup is the memory coordinator with a membership watch whose
// channel the test holds, to see that wrappers hand it through.
type watchingGroup struct {
	*memory.Coordinator
	ch chan struct{}
}

func (w watchingGroup) WatchMembers(ctx context.Context, group string) (<-chan struct{}, error) {
	return w.ch, nil
}

// Every group wrapper passes the membership watch of the coordinator it
// wraps through (verify's members wake on joins and leaves, as real ones
// do); over a coordinator that cannot watch, the watch never fires and ends
// with its context.
func TestWrapGroupKeepsMembersWatch(t *testing.T) {
	m := memory.New()
	defer m.Close()
	inner := watchingGroup{m, make(chan struct{}, 1)}
	inner.ch <- struct{}{}
	for _, bug := range []string{"", plant.ReplyDeadline, plant.NoMargin, plant.RenewAfterExpiry} {
		w, ok := plant.WrapGroup(plant.GroupPassthrough{Group: inner}, bug, config()).(partition.MembersWatcher)
		if !ok {
			t.Fatalf("WrapGroup(%q) cannot watch members", bug)
		}
		ch, err := w.WatchMembers(t.Context(), "g")
		if err != nil || ch != (<-chan struct{})(inner.ch) {
			t.Errorf("WrapGroup(%q).WatchMembers() = %v, %v; want the coordinator's own watch", bug, ch, err)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	ch, err := plant.GroupPassthrough{Group: m}.WatchMembers(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("a watch over a coordinator that cannot watch fired")
	default:
	}
	cancel()
	if _, open := <-ch; open {
		t.Error("the watch sent a value after its context ended; want it closed")
	}
}
