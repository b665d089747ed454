package partitiontest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"
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

// hold fails the test unless cond holds at every poll for d.
func (f *fleet) hold(what string, d time.Duration, cond func() bool) {
	f.t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if !cond() {
			f.t.Fatalf("%s: condition broken; owners %v", what, f.owners())
		}
	}
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
