package cli

import (
	"fmt"

	"github.com/tenure-dev/tenure"
)

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
