package partition

import (
	"fmt"
	"slices"

	"github.com/tenure-dev/tenure/internal/display"
)

// A CountError reports that a member refused to join a group because a
// live member of it runs the group with another number of partitions.
// Members that disagree on P compute different assignments and leave
// partitions unowned, so every member announces its P as it joins
// (Coordinator.JoinGroup records it with the membership:
// Member.Partitions) and, until its first view of the membership has
// settled (before it claims anything), refuses to run beside a member that
// announced another: Run leaves the group and returns a *CountError.
// A member that has settled does not refuse; it leaves a newcomer with
// another P out of its assignment and logs an error, and the newcomer
// refuses. Members that announced nothing (older versions) are taken to
// agree. Callers of Group.Run read Member and Theirs with errors.As, to
// say which count the group runs with.
type CountError struct {
	// Group is the group's key.
	Group string
	// Partitions is this member's partition count (Config.Partitions).
	Partitions int
	// Member is the identity of the live member that announced another.
	Member string
	// Theirs is the partition count it announced.
	Theirs int
}

// Error names the group, both counts and the other member.
func (e *CountError) Error() string {
	return fmt.Sprintf("partition: refusing to join group %q with %d partitions: its live member %s runs it with %d; every member of a group must run it with the same number of partitions (to change it, stop every member first)",
		e.Group, e.Partitions, display.Holder(e.Member), e.Theirs)
}

// agreeing returns the IDs of the members of ms that run the group with
// this member's partition count, or announced none. Before this member's
// first view has settled, a member that announced another count makes it
// refuse (a *CountError); after, that member is left out of the
// assignment, with an error logged once per membership.
func (r *runner) agreeing(ms []Member) ([]string, error) {
	ids := make([]string, 0, len(ms))
	for id := range r.disagree { // forget members that are gone
		if !slices.ContainsFunc(ms, func(m Member) bool { return m.ID == id }) {
			delete(r.disagree, id)
		}
	}
	for _, m := range ms {
		if m.Partitions == 0 || m.Partitions == r.cfg.Partitions || m.ID == r.g.id {
			ids = append(ids, m.ID)
			continue
		}
		err := &CountError{Group: r.cfg.Key, Partitions: r.cfg.Partitions, Member: m.ID, Theirs: m.Partitions}
		if r.settled == nil {
			r.g.log.Error("refusing to join: a live member runs the group with another number of partitions",
				"partitions", r.cfg.Partitions, "member", m.ID, "member_partitions", m.Partitions)
			return nil, err
		}
		if r.disagree[m.ID] != m.Epoch {
			r.g.log.Error("a member joined with another number of partitions; it is left out of this member's assignment, and should refuse to run",
				"partitions", r.cfg.Partitions, "member", m.ID, "member_partitions", m.Partitions, "epoch", m.Epoch)
		}
		r.disagree[m.ID] = m.Epoch
	}
	return ids, nil
}
