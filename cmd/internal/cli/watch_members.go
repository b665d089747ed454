package cli

import (
	"context"
	"fmt"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// A memberFeed reads, for watch --key, the membership records of group
// that no member wrote (see tenure.ForeignRecord.Member). When everyWrite
// (etcd, whose WatchMembers fires at every write under the group's
// memberships, one made by hand too), it reads them each time that watch
// fires, so that the group's partition keys, which ListForeign reads with
// them, are not read every second; else (PostgreSQL notifies only joins
// and leaves, Kubernetes has no membership watch) at each lookup.
type memberFeed struct {
	c          tenure.Coordinator
	group      string
	everyWrite bool
	changes    <-chan struct{} // nil until the watch is open
	stale      bool            // the last read failed: read again at the next lookup
}

// probed is called at each lookup of the key: it reads the records, or
// opens the watch that says when to (which fires at once).
func (f *memberFeed) probed(ctx context.Context, st *watchState) error {
	if !f.everyWrite || f.stale {
		return f.read(ctx, st)
	}
	if f.changes != nil {
		return nil
	}
	w, ok := f.c.(partition.MembersWatcher)
	if !ok {
		f.everyWrite = false
		return f.read(ctx, st)
	}
	ch, err := w.WatchMembers(ctx, f.group)
	if err != nil {
		return f.read(ctx, st) // and try the watch again at the next lookup
	}
	f.changes = ch
	return nil
}

// changed is called when the watch fires, or when it is closed (open is
// false): it is opened again at the next lookup.
func (f *memberFeed) changed(ctx context.Context, st *watchState, open bool) error {
	if !open {
		f.changes = nil
		return nil
	}
	return f.read(ctx, st)
}

// read prints the membership records of the group that appeared or are
// gone since the last read.
func (f *memberFeed) read(ctx context.Context, st *watchState) error {
	ctx, cancel := context.WithTimeout(ctx, watchProbeTimeout)
	defer cancel()
	rs, err := foreignUnder(ctx, f.c, f.group)
	if f.stale = err != nil; f.stale {
		return nil // the lookup says when the coordinator is unreachable
	}
	return st.memberRecords(foreignMembersOf(rs, f.group))
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
