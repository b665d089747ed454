package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/tenure-dev/tenure/etcd"

	"github.com/tenure-dev/tenure"
)

// A memberFeed reads the membership records of group that no member
// wrote (see tenure.ForeignRecord.Member) for watch --key, in a goroutine
// of its own, and sends each read that succeeded on reads. It reads at
// each lookup of the key (lookup), and at once when asked (resync); on
// etcd, whose membership watch fires at every write under the group's
// memberships (one made by hand too), it reads when that watch fires
// instead of at each lookup, so that the group's partition keys, which a
// read lists too, are not read every second. Each read, and each opening
// of the watch, gives up after watchProbeTimeout; one read at most is in
// flight, and watchKey's loop never waits for one: a read that fails or is
// slow means the records are shown at a later one.
type memberFeed struct {
	c      tenure.Coordinator
	group  string
	w      *etcd.Coordinator // nil: read at each lookup
	lookup chan struct{}     // one slot: the key was looked up
	resync chan struct{}     // one slot: read now
	reads  chan []tenure.ForeignRecord
	done   chan struct{} // closed when run returns
}

func newMemberFeed(c tenure.Coordinator, group string) *memberFeed {
	w, _ := c.(*etcd.Coordinator)
	return &memberFeed{c: c, group: group, w: w, lookup: make(chan struct{}, 1), resync: make(chan struct{}, 1),
		reads: make(chan []tenure.ForeignRecord), done: make(chan struct{})}
}

// ask asks run for a read at its next turn without waiting: on the
// channel of a lookup, or of a resync.
func ask(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default: // asked already
	}
}

// run reads when asked, or when the membership watch fires, until ctx
// ends. A read that failed is made again at the next lookup; a watch that
// closed (etcd was restarted, or lost its raft leader) or could not be
// opened is opened again there, and read at once meanwhile.
func (f *memberFeed) run(ctx context.Context) {
	defer close(f.done)
	var changes <-chan struct{} // nil while no membership watch is open
	stopWatch := func() {}
	defer func() { stopWatch() }()
	stale := false // the last read failed
	for {
		var read bool
		select {
		case <-ctx.Done():
			return
		case <-f.resync:
			read = true
		case <-f.lookup:
			if f.w != nil && changes == nil {
				changes, stopWatch = f.open(ctx) // fires at once when open
			}
			read = changes == nil || stale
		case _, open := <-changes:
			if read = open; !open {
				changes = nil
				stopWatch()
			}
		}
		if read {
			stale = !f.read(ctx)
		}
	}
}

// open opens the membership watch, giving up after watchProbeTimeout
// (etcd's client waits for a connection as long as its context lasts). It
// returns a nil channel when it could not; the func ends the watch.
func (f *memberFeed) open(ctx context.Context) (<-chan struct{}, func()) {
	wctx, cancel := context.WithCancel(ctx)
	late := time.AfterFunc(watchProbeTimeout, cancel)
	ch, err := f.w.WatchMembers(wctx, f.group)
	if !late.Stop() || err != nil {
		cancel()
		return nil, func() {}
	}
	return ch, cancel
}

// read reads the group's membership records, sends them on f.reads, and
// reports whether it could.
func (f *memberFeed) read(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, watchProbeTimeout)
	rs, err := foreignUnder(rctx, f.c, f.group)
	cancel()
	if err != nil {
		return false // the lookup says when the coordinator is unreachable
	}
	select {
	case f.reads <- foreignMembersOf(rs, f.group):
	case <-ctx.Done():
	}
	return true
}

// A memberRecordID names a membership record that watch has shown.
type memberRecordID struct {
	group, member string
	token         uint64
}

// memberRecords prints each membership record of rs (see
// tenure.ForeignRecord.Member) that was not shown before, as a
// foreign_member event, and each shown before that rs no longer holds, as
// foreign_member_gone.
func (s *watchState) memberRecords(rs []tenure.ForeignRecord) error {
	now := map[memberRecordID]bool{}
	for _, r := range rs {
		if r.Member == "" {
			continue
		}
		id := memberRecordID{r.Key, r.Member, r.Token}
		now[id] = true
		if s.members[id] {
			continue
		}
		if s.members == nil {
			s.members = map[memberRecordID]bool{}
		}
		s.members[id] = true
		l := WatchLine{Event: "foreign_member", Key: r.Key, Member: r.Member, Token: r.Token, Record: recordKind(r), Reason: r.Reason}
		if ms := r.TTL.Milliseconds(); r.TTL >= 0 {
			l.TTLLeftMS = &ms
		}
		if err := s.p.print(l); err != nil {
			return err
		}
	}
	for id := range s.members {
		if !now[id] {
			delete(s.members, id)
			if err := s.p.print(WatchLine{Event: "foreign_member_gone", Key: id.group, Member: id.member, Token: id.token}); err != nil {
				return err
			}
		}
	}
	return nil
}

// memberText is the text of a foreign_member or foreign_member_gone line.
func memberText(l WatchLine) string {
	if l.Event == "foreign_member_gone" {
		return fmt.Sprintf("membership record of member %q with token %d is gone", l.Member, l.Token)
	}
	r := tenure.ForeignRecord{Key: l.Key, Member: l.Member, Reason: l.Reason, Malformed: l.Record == "malformed"}
	return fmt.Sprintf("token %d  %s", l.Token, foreignAdvice(r))
}
