package partitiontest

import (
	"context"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"
)

// watchMembers checks a partition.MembersWatcher: a first value at once,
// one after another coordinator's member joins and one after it leaves,
// and the channel closed when ctx ends.
func (s suite) watchMembers(t *testing.T) {
	w, ok := s.group(t).(partition.MembersWatcher)
	if !ok {
		t.Fatal("the coordinator is not a partition.MembersWatcher")
	}
	other := s.group(t)
	group := groupName(t)
	wctx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	ch, err := w.WatchMembers(wctx, group)
	if err != nil {
		t.Fatalf("WatchMembers(%q) error = %v", group, err)
	}
	next := func(what string) {
		t.Helper()
		select {
		case _, open := <-ch:
			if !open {
				t.Fatalf("WatchMembers channel closed; want a value %s", what)
			}
		case <-time.After(s.o.slack):
			t.Fatalf("WatchMembers sent nothing %s within %s", what, s.o.slack)
		}
	}
	drain := func() {
		for {
			select {
			case <-ch:
			case <-time.After(100 * time.Millisecond):
				return
			}
		}
	}
	next("at the start")
	drain()
	m := joinFor(t, other, group, "b#1", 0, time.Minute)
	next("after a member joined")
	drain()
	if err := other.LeaveGroup(ctx(t), m); err != nil {
		t.Fatalf("LeaveGroup() error = %v", err)
	}
	next("after a member left")
	cancel()
	deadline := time.After(s.o.slack)
	for {
		select {
		case _, open := <-ch:
			if !open {
				return
			}
		case <-deadline:
			t.Fatalf("WatchMembers channel still open %s after its ctx ended", s.o.slack)
		}
	}
}
