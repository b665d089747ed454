package partitiontest

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// lookalikeIDs are member IDs that a mapping would confuse if it folded
// case or Unicode normalisation, trimmed spaces, or split at the
// characters coordinators use in their own keys, rows and Lease names, or
// cut long IDs short: each is a member of its own.
var lookalikeIDs = []string{
	"m#1", "M#1", "m#1 ", " m#1",
	"\u00e9#1",  // é, precomposed (NFC)
	"e\u0301#1", // e and a combining acute accent (NFD): canonically equal to the one above
	"\uff4d#1",  // a fullwidth m: NFKC folds it to m
	"m#1#1", "m/1#1", "m/../0#1",
	"0000000000000001#m#1", // an etcd membership key's lease, '#', then an ID
	`m"';--\#1`,
	strings.Repeat("\u00e9", 127) + "#1",   // 256 bytes, the most an ID may have, of 2-byte runes
	strings.Repeat("\u00e9", 126) + "ab#1", // 256 bytes: the same first 252, so a truncation or short hash would fold them
}

// lookalikes checks members of one group whose IDs differ only in case,
// Unicode normalisation, spaces or key syntax (lookalikeIDs), each on one
// of two coordinators: GroupMembers lists each under its own ID, byte for
// byte, and GroupPartitions each one's partition under its ID; a member's
// claim of its neighbour's partition is refused with a *tenure.HeldError
// naming the neighbour exactly; a single-key Acquire of the neighbour's
// partition key under the member's ID is refused, and the member's
// release of the neighbour's grant frees nothing; when every other member
// leaves, only its own memberships and partitions go.
func (s suite) lookalikes(t *testing.T) {
	cs := []partition.Coordinator{s.group(t), s.group(t)}
	reader := s.group(t)
	g := groupName(t)
	n := len(lookalikeIDs)
	ms := make([]partition.Member, n)
	gs := make([]tenure.Grant, n)
	for i, id := range lookalikeIDs {
		ms[i] = joinFor(t, cs[i%2], g, id, n, time.Minute)
		gs[i] = claimAll(t, cs[i%2], ms[i], strconv.Itoa(i))[0]
		if gs[i].Holder != id {
			t.Fatalf("claim of partition %d by member %q = %s; want a grant to that ID", i, id, gs[i])
		}
	}
	view := groupView{members: ms, parts: gs}
	view.check(t, reader, g)
	for i := range ms {
		j, c := (i+1)%n, cs[i%2]
		var held *tenure.HeldError
		if r := claim(t, c, ms[i], strconv.Itoa(j))[0]; !errors.As(r.Err, &held) || held.Holder != lookalikeIDs[j] || held.Token != gs[j].Token {
			t.Errorf("claim by %q of %q's partition = %s, %v; want a *HeldError naming %q, token %d", lookalikeIDs[i], lookalikeIDs[j], r.Grant, r.Err, lookalikeIDs[j], gs[j].Token)
		}
		if gr, err := c.Acquire(ctx(t), gs[j].Key, lookalikeIDs[i], time.Minute); err == nil {
			t.Errorf("Acquire(%q, %q), the live partition of %q = %s; want it refused", gs[j].Key, lookalikeIDs[i], lookalikeIDs[j], gr)
		}
		if err := c.ReleasePartitions(ctx(t), ms[i], gs[j:j+1]); err != nil {
			t.Errorf("ReleasePartitions(%q, the grant of %q) = %v; want nil (nothing freed)", lookalikeIDs[i], lookalikeIDs[j], err)
		}
	}
	view.check(t, reader, g)
	var rest groupView
	for i, m := range ms {
		if i%2 == 0 {
			if err := cs[i%2].LeaveGroup(ctx(t), m); err != nil {
				t.Fatalf("LeaveGroup(%s) error = %v", m, err)
			}
			continue
		}
		rest.members, rest.parts = append(rest.members, m), append(rest.parts, gs[i])
	}
	rest.check(t, reader, g)
	for i, m := range rest.members {
		m = renew(t, cs[1], m)
		if lost, err := cs[1].CheckPartitions(ctx(t), m, rest.parts[i:i+1]); err != nil || len(lost) != 0 {
			t.Errorf("CheckPartitions(%q) after its lookalikes left = %v, %v; want its partition still owned", m.ID, lost, err)
		}
	}
}
