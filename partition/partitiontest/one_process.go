package partitiontest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/termcheck"
	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// electorAndGroupOfOneProcess runs, in one process on one coordinator, a
// partition Group of one partition and an Elector for that partition's key,
// both of one identity (Holder and Instance, as identity.ProcessInstance
// gives every Elector and Group of a process, and which Run accepts: the
// rule against one identity twice is per key for Electors and per group
// for Groups). termcheck judges every act of either side (a Term.Check
// that passed): no term may pass Check after a term with a greater token
// did, nor while the other side's term passes it (both acting at once).
// The Elector's Acquire must be refused while the member lives: it leads
// no term that began before the member's term of the partition ended. (On
// a loaded machine the member's 3 s lease can lapse, its term ends at its
// local deadline, and the Elector may then lead: that is no fault, and the
// test says so in its log; termcheck still judges every act.)
func (s suite) electorAndGroupOfOneProcess(t *testing.T) {
	c := s.group(t)
	g := groupName(t)
	key := g + "/0"
	l := termcheck.New()
	started := make(chan struct{})
	var once sync.Once
	work := func(who string, ctx context.Context, term *tenure.Term) error {
		defer l.Run(key, who, term)()
		for ctx.Err() == nil {
			l.Act(key, who, term)
			if who == "group" {
				once.Do(func() { close(started) })
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	}
	gcfg := partition.DefaultConfig()
	gcfg.Key, gcfg.Partitions, gcfg.Holder, gcfg.Instance, gcfg.TTL = g, 1, "node", "1", 3*time.Second
	var tl timeline
	gcfg.OnTransition = tl.add("group")
	grp, err := partition.New(c, gcfg)
	if err != nil {
		t.Fatal(err)
	}
	ecfg := tenure.DefaultConfig()
	ecfg.Key, ecfg.Holder, ecfg.Instance, ecfg.TTL = key, "node", "1", 3*time.Second
	ecfg.OnTransition = tl.add("elector")
	e, err := tenure.NewElector(c, ecfg)
	if err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = grp.Run(run, func(ctx context.Context, p partition.Partition, term *tenure.Term) error {
			return work("group", ctx, term)
		})
	})
	select {
	case <-started: // the group's member runs the partition
	case <-time.After(gcfg.TTL + s.o.slack):
		stop()
		wg.Wait()
		t.Fatalf("the group's member ran no partition of %q within %s", g, gcfg.TTL+s.o.slack)
	}
	wg.Go(func() {
		_ = e.Run(run, func(ctx context.Context, term *tenure.Term) error { return work("elector", ctx, term) })
	})
	time.Sleep(gcfg.TTL)
	stop()
	wg.Wait()
	l.Verify(t)
	tl.judge(t, key, l.Terms("elector"))
	t.Logf("%d acts of %d terms", l.Acts(), l.Terms(""))
}

// timeline is the transitions of the group's member and the Elector, in
// the order reported.
type timeline struct {
	mu  sync.Mutex
	all []string
	ts  []tenure.Transition
}

// add returns an OnTransition that records who's transitions.
func (tl *timeline) add(who string) func(tenure.Transition) {
	return func(tr tenure.Transition) {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		tl.all = append(tl.all, who)
		tl.ts = append(tl.ts, tr)
	}
}

// judge fails t when the Elector led any of its n terms of key while the
// member's term lived.
func (tl *timeline) judge(t *testing.T, key string, n int) {
	t.Helper()
	switch {
	case n > 0 && !tl.endedFirst("group", "elector"):
		t.Errorf("the Elector led %d terms of %q while the member that owns it lived; want its Acquire refused; transitions:\n%s", n, key, tl)
	case n > 0:
		t.Logf("the member's term ended before the Elector's began (its lease lapsed: a loaded machine), so the Elector led; transitions:\n%s", tl)
	}
}

func (tl *timeline) String() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var b strings.Builder
	for i, tr := range tl.ts {
		fmt.Fprintf(&b, "  %s %s %s token %d at %s: %v\n", tl.all[i], tr.Kind, tr.Key, tr.Token, tr.At.Format("15:04:05.000"), tr.Err)
	}
	return b.String()
}

// electorThenGroupOfOneProcess is electorAndGroupOfOneProcess in the other
// order: the Elector of a process leads a partition's key first, then a
// partition Group of that process, under the same identity, starts a
// member. The member's claims of the partition must be refused while the
// Elector's grant lives: it runs no term that began while the Elector's
// term lived. termcheck judges every act of either side.
func (s suite) electorThenGroupOfOneProcess(t *testing.T) {
	c := s.group(t)
	g := groupName(t)
	key := g + "/0"
	l := termcheck.New()
	led := make(chan struct{})
	var once sync.Once
	work := func(who string, ctx context.Context, term *tenure.Term) error {
		defer l.Run(key, who, term)()
		for ctx.Err() == nil {
			l.Act(key, who, term)
			if who == "elector" {
				once.Do(func() { close(led) })
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	}
	var tl timeline
	ecfg := tenure.DefaultConfig()
	ecfg.Key, ecfg.Holder, ecfg.Instance, ecfg.TTL = key, "node", "1", 3*time.Second
	ecfg.OnTransition = tl.add("elector")
	gcfg := partition.DefaultConfig()
	gcfg.Key, gcfg.Partitions, gcfg.Holder, gcfg.Instance, gcfg.TTL = g, 1, "node", "1", 3*time.Second
	gcfg.OnTransition = tl.add("group")
	e, eerr := tenure.NewElector(c, ecfg)
	grp, gerr := partition.New(c, gcfg)
	if err := errors.Join(eerr, gerr); err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = e.Run(run, func(ctx context.Context, term *tenure.Term) error { return work("elector", ctx, term) })
	})
	select {
	case <-led:
	case <-time.After(ecfg.TTL + s.o.slack):
		stop()
		wg.Wait()
		t.Fatalf("the Elector led no term of %q within %s", key, ecfg.TTL+s.o.slack)
	}
	wg.Go(func() {
		_ = grp.Run(run, func(ctx context.Context, p partition.Partition, term *tenure.Term) error {
			return work("group", ctx, term)
		})
	})
	time.Sleep(gcfg.TTL)
	stop()
	wg.Wait()
	l.Verify(t)
	if n := l.Terms("group"); n > 0 && !tl.endedFirst("elector", "group") {
		t.Errorf("the member ran %d terms of %q while the Elector of its identity led it; want its claims refused; transitions:\n%s", n, key, tl.String())
	} else if n > 0 {
		t.Logf("the Elector's term ended before the member's began (its lease lapsed: a loaded machine), so the member ran it; transitions:\n%s", tl.String())
	}
	t.Logf("%d acts of %d terms", l.Acts(), l.Terms(""))
}

// endedFirst reports whether a term of first had ended (for any reason
// but a release) before then's first term began.
func (tl *timeline) endedFirst(first, then string) bool {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	ended := false
	for i, tr := range tl.ts {
		switch {
		case tl.all[i] == first && tr.Kind != tenure.Elected && tr.Kind != tenure.Resigned:
			ended = true
		case tl.all[i] == then && tr.Kind == tenure.Elected:
			return ended
		}
	}
	return false
}
