package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/history"
	"github.com/tenure-dev/tenure/internal/plant"
	"github.com/tenure-dev/tenure/memory"
)

// clockRig is a node's coordinator stack over the memory coordinator, as
// runElector builds it: clocked, the plant, the recorder.
type clockRig struct {
	mc    *memory.Coordinator
	clock *nodeClock
	cfg   tenure.Config
	c     clocked
	out   *bytes.Buffer
}

func newClockRig(t *testing.T, bug string) *clockRig {
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder, cfg.TTL, cfg.Margin, cfg.MaxDrift = "k", "n0.1", 2*time.Second, 200*time.Millisecond, 0.01
	r := &clockRig{mc: memory.New(), clock: &nodeClock{}, cfg: cfg, out: &bytes.Buffer{}}
	t.Cleanup(func() { r.mc.Close() })
	rec := recorder{plant.Passthrough{Coordinator: r.mc}, newEventWriter(r.out, cfg.Holder)}
	r.c = clocked{plant.Passthrough{Coordinator: plant.Wrap(rec, bug, cfg)}, newNodeTime(r.clock, cfg, bug)}
	return r
}

// deadline is g's local deadline on Go's clock.
func (r *clockRig) deadline(g tenure.Grant) time.Time {
	return g.Sent.Add(timing.SafeLease(g.TTL, r.cfg.MaxDrift, r.cfg.Margin)).Time()
}

// events returns the events the recorder wrote.
func (r *clockRig) events(t *testing.T) []history.Event {
	var out []history.Event
	sc := bufio.NewScanner(bytes.NewReader(r.out.Bytes()))
	for sc.Scan() {
		var ev history.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// A grant's local deadline falls SafeLease(TTL)/rate after the send, as on
// a node clock running at rate, and the recorder below the plants records
// the rate the lease was counted at. Under the slow-clock plant, the clock
// runs at slowClockRate while a clock fault is on, whatever its rate.
func TestClockedCountsLeasesOnTheNodeClock(t *testing.T) {
	for _, tc := range []struct {
		name     string
		bug      string
		set      clockControl
		wantRate float64
	}{
		{"true clock", plant.None, clockControl{}, 1},
		{"slow within the bound", plant.None, clockControl{On: true, Rate: 0.995}, 0.995},
		{"fast within the bound", plant.None, clockControl{On: true, Rate: 1.01}, 1.01},
		{"slow-clock plant, fault on", plant.SlowClock, clockControl{On: true, Rate: 1.005}, 0.712},
		{"slow-clock plant, no fault", plant.SlowClock, clockControl{}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newClockRig(t, tc.bug)
				r.clock.set(tc.set)
				sent := time.Now()
				g, err := r.c.Acquire(t.Context(), "k", "n0.1", r.cfg.TTL)
				if err != nil {
					t.Fatal(err)
				}
				safe := timing.SafeLease(g.TTL, r.cfg.MaxDrift, r.cfg.Margin)
				want := sent.Add(time.Duration(float64(safe) / tc.wantRate))
				if d := r.deadline(g).Sub(want); d.Abs() > time.Millisecond {
					t.Errorf("deadline %s after the send; want %s (SafeLease %s / rate %v)", r.deadline(g).Sub(sent), want.Sub(sent), safe, tc.wantRate)
				}
				evs := r.events(t)
				if len(evs) != 1 || evs[0].Kind != history.KindAcquire || math.Abs(evs[0].Rate-tc.wantRate) > 0.001 {
					t.Errorf("recorded %+v; want one acquire counted at rate %v", evs, tc.wantRate)
				}
			})
		})
	}
}

// The slow-clock plant's rate puts the local deadline a quarter of the TTL
// after the lease, at any margin.
func TestSlowClockRate(t *testing.T) {
	cfg := tenure.DefaultConfig()
	for _, margin := range []time.Duration{0, 200 * time.Millisecond, time.Second} {
		cfg.TTL, cfg.Margin, cfg.MaxDrift = 2*time.Second, margin, 0.01
		late := time.Duration(float64(timing.SafeLease(cfg.TTL, cfg.MaxDrift, cfg.Margin))/slowClockRate(cfg)) - cfg.TTL
		if want := cfg.TTL / 4; (late - want).Abs() > time.Microsecond {
			t.Errorf("margin %s: deadline %s after the lease; want %s", margin, late, want)
		}
	}
}

// The wall-clock plant reads each lease's send on the wall clock and
// converts it with the offset between the wall and monotonic clocks it
// measured at the term's first request: a jump since then moves every
// later deadline by the jump (forward: past the lease). The node as
// shipped never reads the wall clock, and a term that began after the
// jump measured the offset after it.
func TestWallClockStaleOffset(t *testing.T) {
	const jump = time.Second
	for _, tc := range []struct {
		name      string
		bug       string
		jump      time.Duration // how far the wall clock jumps forward
		newTerm   bool          // the term begins after the jump
		moved     time.Duration // how far the renewal's deadline moves
		groupTest bool
	}{
		{"shipped, jump forward", plant.None, jump, false, 0, false},
		{"plant, no jump", plant.WallClock, 0, false, 0, false},
		{"plant, jump forward", plant.WallClock, jump, false, jump, false},
		{"plant, jump back", plant.WallClock, -jump, false, -jump, false},
		{"plant, term begun after the jump", plant.WallClock, jump, true, 0, false},
		{"shipped member, jump forward", plant.None, jump, false, 0, true},
		{"planted member, jump forward", plant.WallClock, jump, false, jump, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newClockRig(t, tc.bug)
				if tc.newTerm {
					r.clock.set(clockControl{On: true, Wall: tc.jump})
				}
				renew := r.leaseOf(t, tc.groupTest)
				time.Sleep(500 * time.Millisecond)
				r.clock.set(clockControl{On: true, Wall: tc.jump})
				sent := time.Now()
				dl := renew()
				if d := dl.Sub(sent.Add(timing.SafeLease(r.cfg.TTL, r.cfg.MaxDrift, r.cfg.Margin))) - tc.moved; d.Abs() > time.Millisecond {
					t.Errorf("deadline %s after the renewal's send; want SafeLease %s moved by %s", dl.Sub(sent), timing.SafeLease(r.cfg.TTL, r.cfg.MaxDrift, r.cfg.Margin), tc.moved)
				}
			})
		})
	}
}

// leaseOf starts a term (or, for a group, a membership) on r and returns
// a function that renews it and returns the renewal's local deadline.
func (r *clockRig) leaseOf(t *testing.T, group bool) func() time.Time {
	t.Helper()
	if group {
		g := clockedGroup{plant.GroupPassthrough{Group: r.mc}, newNodeTime(r.clock, r.cfg, r.c.t.bug)}
		m, err := g.JoinGroup(t.Context(), "grp", "n0.1", r.cfg.TTL, 4)
		if err != nil {
			t.Fatal(err)
		}
		return func() time.Time {
			m, err := g.RenewMember(t.Context(), m)
			if err != nil {
				t.Fatal(err)
			}
			return m.Sent.Add(timing.SafeLease(m.TTL, r.cfg.MaxDrift, r.cfg.Margin)).Time()
		}
	}
	g, err := r.c.Acquire(t.Context(), "k", "n0.1", r.cfg.TTL)
	if err != nil {
		t.Fatal(err)
	}
	return func() time.Time {
		g, err := r.c.Renew(t.Context(), g)
		if err != nil {
			t.Fatal(err)
		}
		return r.deadline(g)
	}
}

// readControls applies each setting to the node's clock and reports it; a
// line it cannot read is reported, not applied.
func TestReadControls(t *testing.T) {
	var out bytes.Buffer
	clock := &nodeClock{}
	in := strings.NewReader(`{"on":true,"rate":0.995,"wall":-1500000000}` + "\nnonsense\n")
	readControls(in, clock, newEventWriter(&out, "n0.1"))
	if got := clock.get(); got != (clockControl{On: true, Rate: 0.995, Wall: -1500 * time.Millisecond}) {
		t.Errorf("clock = %+v; want on, rate 0.995, wall −1.5s", got)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"rate":0.995`) || !strings.Contains(lines[0], `"wall":-1500000000`) || !strings.Contains(lines[1], "bad clock control") {
		t.Errorf("events:\n%s\nwant the setting, then the bad line", out.String())
	}
	if w := clock.wallNow().Sub(time.Now()); w > -1499*time.Millisecond || w < -1501*time.Millisecond {
		t.Errorf("wall clock %s from true; want −1.5s", w)
	}
}
