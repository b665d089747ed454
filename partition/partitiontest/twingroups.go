package partitiontest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/timing"
	"github.com/tenure-dev/tenure/partition"
)

// twinGroups checks two partition.Groups of one identity (one Holder and
// one Instance), each on a coordinator of its own, as two processes given
// one identity would be, or a process restarted under its own identity
// while its old membership lives: to the coordinator they are two
// memberships of one member ID. No partition is ever run by two of them at
// once (fleet.owners fails the test when one is); every partition keeps
// running while a twin joins; when the first crashes and another of the
// same identity starts at once (a restart), every partition runs again
// within the TTL and the slack; when the twin leaves, every partition
// runs within the TTL and the slack, and the group lists the identity once
// more; tokens only grow.
func (s suite) twinGroups(t *testing.T) {
	ttl := s.o.ttl
	f := s.fleet(t, 6, ttl)
	f.cfg.Margin = ttl / 4
	f.start("a")
	f.start("b")
	f.await("a and b run every partition", ttl+s.o.slack, f.settled)
	f.startAs("twin", "a")
	renewEvery := timing.RenewInterval(f.cfg.TTL, f.cfg.RenewInterval)
	f.hold("while a twin of a (one identity, another coordinator) runs", 3*renewEvery, f.allRun)
	f.stop("a", true)
	f.startAs("restarted", "a")
	took := f.await("every partition runs again after a crashed and restarted under its identity beside its twin", ttl+s.o.slack, f.allRun)
	t.Logf("a crashed and restarted beside its twin: every partition runs again after %s (TTL %s)", took, ttl)
	f.stop("twin", false)
	took = f.await("every partition runs after the twin left", ttl+s.o.slack, f.allRun)
	t.Logf("the twin left: every partition runs after %s", took)
	f.hold("after the twin left", renewEvery, f.allRun)
	f.checkIDs("a#1", "b#1")
	f.stopAll()
	f.checkTokens()
}

// allRun reports whether every partition is run by a member (none by two:
// see owners).
func (f *fleet) allRun() bool { return len(f.owners()) == f.cfg.Partitions }

// hold fails the test unless cond holds at every poll for d. A break
// whose partitions not run had their terms end at their member's local
// deadline (no renewal of the membership got through in time: a loaded
// machine) is no fault of what the test does meanwhile: it is logged, and
// the hold ends there (the awaits that follow still judge that every
// partition runs again). A member leaves a term out of its Snapshot once
// its deadline has passed, a moment before it reports the term ended, so
// a break waits up to the TTL for those reports. Any other break fails
// the test, with the terms that ended since the hold began.
func (f *fleet) hold(what string, d time.Duration, cond func() bool) {
	f.t.Helper()
	f.mu.Lock()
	from := len(f.ends)
	f.mu.Unlock()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			continue
		}
		owners := f.owners()
		ends, late := f.endsOf(from, owners)
		if late {
			f.t.Logf("%s: condition broken, owners %v, after terms ended at their local deadlines (renewals late: a loaded machine), not judged:\n%s", what, owners, endList(ends))
			return
		}
		f.t.Fatalf("%s: condition broken; owners %v (of partitions %v); terms ended since the hold began:\n%s", what, owners, f.cfg.PartitionNames(), endList(ends))
	}
}

// endsOf waits up to the TTL and the slack (a report is a goroutine's
// send, late on a loaded machine) for every partition that owners leaves
// out to have a term ended since ends[from], and returns those ends and
// whether each of the partitions left out has one, of kind Expired (its
// local deadline).
func (f *fleet) endsOf(from int, owners map[string]string) ([]ended, bool) {
	for give := time.Now().Add(f.cfg.TTL + f.s.o.slack); ; time.Sleep(20 * time.Millisecond) {
		f.mu.Lock()
		ends := slices.Clone(f.ends[from:])
		f.mu.Unlock()
		all, late := true, true
		for _, name := range f.cfg.PartitionNames() {
			key := partition.Key(f.cfg.Key, name)
			if _, run := owners[key]; run {
				continue
			}
			j := slices.IndexFunc(ends, func(e ended) bool { return e.tr.Key == key })
			all = all && j >= 0
			late = late && j >= 0 && ends[j].tr.Kind == tenure.Expired
		}
		if all || time.Now().After(give) {
			return ends, all && late
		}
	}
}

// endList formats ends, a line each.
func endList(ends []ended) string {
	var b strings.Builder
	for _, e := range ends {
		fmt.Fprintf(&b, "  %s: %s %s token %d at %s: %v\n", e.who, e.tr.Kind, e.tr.Key, e.tr.Token, e.tr.At.Format("15:04:05.000"), e.tr.Err)
	}
	return b.String()
}

// checkIDs checks that the group's live members are want, by ID, each once.
func (f *fleet) checkIDs(want ...string) {
	f.t.Helper()
	for _, m := range f.members {
		ms, err := m.coord.GroupMembers(ctx(f.t), f.cfg.Key)
		if err != nil {
			f.t.Fatalf("GroupMembers(%q) error = %v", f.cfg.Key, err)
		}
		var got []string
		for _, m := range ms {
			got = append(got, m.ID)
		}
		slices.Sort(got)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			f.t.Errorf("GroupMembers(%q) = %v; want %v", f.cfg.Key, got, want)
		}
		return
	}
}
