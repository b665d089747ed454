package partition

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenure-dev/tenure"
)

// Table is a group's partition table as the coordinator holds it: who owns
// each partition, with which token and how much lease, and each member's
// share, as ReadTable and ReadGroupTable read it: for dashboards and
// health checks (alert on Stats.Unowned, say).
type Table struct {
	// Group is the group's key.
	Group string
	// Partitions has one row per partition, by index.
	Partitions []Row
	// Members has one row per live member ID, sorted by ID: two
	// memberships of one ID are one member, as the assignment counts them.
	Members []MemberRow
	// Cap is the most partitions the assignment gives one member: ⌈P/N⌉.
	Cap int
	// Stats summarizes the table (OldestUnowned is not known from one
	// reading and is 0).
	Stats Stats
	// Announced is the partition count the live members announce (see
	// Member.Partitions): the largest, if they disagree; 0 when none
	// announces one.
	Announced int
	// Partial reports that Partitions lists only some of the group's
	// partitions, because their names are not known (see ReadGroupTable).
	Partial bool
}

// Row is one partition's line of a Table.
type Row struct {
	// Partition is the partition. Its Index is −1 when it is not known
	// (a Partial table of a group with names of its own).
	Partition Partition
	// Owner is the owning member's ID; empty when the partition is free.
	Owner string
	// Token is the owner's fencing token; 0 when free.
	Token uint64
	// LeaseLeft is the time left on the owner's lease, on the coordinator's
	// clock.
	LeaseLeft time.Duration
}

// MemberRow is one member's line of a Table.
type MemberRow struct {
	// ID is the member's identity.
	ID string
	// TTL is the time left on its lease, or the TTL granted on backends
	// that do not report the time left with the membership (etcd).
	TTL time.Duration
	// Owned is how many partitions it owns.
	Owned int
	// Partitions is the partition count it announced; 0 if none.
	Partitions int
}

// ReadTable reads group's partition table and members from c, for the
// partitions named names (see Names).
func ReadTable(ctx context.Context, c Coordinator, group string, names []string) (Table, error) {
	return readTable(ctx, c, group, names)
}

// ReadGroupTable reads group's partition table for a reader that does not
// know its partitions: every
// partition "0" to "P−1" of the partition count P its live members
// announce, owned or not. The names are not known when owned partitions are
// not among those (a group named with Config.Names), or when no member
// announces a count (older versions): the table is then Partial, listing
// the partitions owned now (with no count announced, and names that are
// partition numbers, every number up to the highest owned), each with its
// number as Index, or −1 for a name of its own; Stats count the announced P
// when there is one.
func ReadGroupTable(ctx context.Context, c Coordinator, group string) (Table, error) {
	ms, gs, err := readGroup(ctx, c, group)
	if err != nil {
		return Table{}, err
	}
	p := announced(ms)
	var owned []string
	for _, g := range gs {
		if n, ok := strings.CutPrefix(g.Key, group+"/"); ok && !strings.Contains(n, "/") {
			owned = append(owned, n)
		}
	}
	if p > 0 && !slices.ContainsFunc(owned, func(n string) bool { return indexOf(n, p) < 0 }) {
		return buildTable(group, Names(p), p, ms, gs), nil
	}
	names, size := guessNames(owned, p)
	t := buildTable(group, names, size, ms, gs)
	t.Partial = true
	for i := range t.Partitions {
		t.Partitions[i].Partition.Index = indexOf(names[i], max(p, len(names)))
	}
	return t, nil
}

// guessNames lists the partitions of a group whose names are not known
// from the owned ones, and how many partitions it has: with no count
// announced and only partition numbers owned, every number up to the
// highest; otherwise the owned names, numbers first.
func guessNames(owned []string, announced int) ([]string, int) {
	top, numbers := -1, true
	for _, n := range owned {
		i, ok := number(n)
		if !ok {
			numbers = false
			break
		}
		top = max(top, i)
	}
	if announced == 0 && numbers {
		return Names(top + 1), top + 1
	}
	names := slices.Clone(owned)
	slices.SortFunc(names, func(a, b string) int {
		x, numA := number(a)
		y, numB := number(b)
		switch {
		case numA && numB:
			return x - y
		case numA: // a number before a name
			return -1
		case numB:
			return 1
		}
		return strings.Compare(a, b)
	})
	return names, max(announced, len(names))
}

// number reads a partition name that is a partition number, as Names
// writes them ("0", "17"; not "017" or "-1").
func number(n string) (int, bool) {
	i, err := strconv.Atoi(n)
	return i, err == nil && i >= 0 && strconv.Itoa(i) == n
}

// indexOf is the index of the partition named n among Names(p), or −1.
func indexOf(n string, p int) int {
	if i, ok := number(n); ok && i < p {
		return i
	}
	return -1
}

// announced is the largest partition count ms announce; 0 if none.
func announced(ms []Member) int {
	p := 0
	for _, m := range ms {
		p = max(p, m.Partitions)
	}
	return p
}

func readTable(ctx context.Context, gc Coordinator, group string, names []string) (Table, error) {
	ms, gs, err := readGroup(ctx, gc, group)
	if err != nil {
		return Table{}, err
	}
	return buildTable(group, names, len(names), ms, gs), nil
}

// readGroup reads group's live members and partition grants.
func readGroup(ctx context.Context, gc Coordinator, group string) ([]Member, []tenure.Grant, error) {
	ms, err := gc.GroupMembers(ctx, group)
	if err != nil {
		return nil, nil, fmt.Errorf("partition: read members of %q: %w", group, err)
	}
	gs, err := gc.GroupPartitions(ctx, group)
	if err != nil {
		return nil, nil, fmt.Errorf("partition: read partitions of %q: %w", group, err)
	}
	return ms, gs, nil
}

// buildTable is the table of the partitions names of a group of p
// partitions, members ms and grants gs.
func buildTable(group string, names []string, p int, ms []Member, gs []tenure.Grant) Table {
	t := Table{Group: group, Partitions: make([]Row, len(names)), Announced: announced(ms)}
	index := make(map[string]int, len(names))
	for i, n := range names {
		index[Key(group, n)] = i
		t.Partitions[i].Partition = Partition{Index: i, Name: n, Key: Key(group, n)}
	}
	owned := make(map[string]int)
	for _, gr := range gs {
		if i, ok := index[gr.Key]; ok {
			row := &t.Partitions[i]
			row.Owner, row.Token, row.LeaseLeft = gr.Holder, gr.Token, gr.TTL
			owned[gr.Holder]++
		}
	}
	t.Members = memberRows(ms, owned)
	n := len(t.Members)
	t.Stats = summarize(p, n, owned)
	if n > 0 {
		t.Cap = (p + n - 1) / n
	}
	return t
}

// memberRows is one row per member ID of ms, sorted by ID, with the
// partitions owned under it: memberships of one ID (a process restarted
// under its identity while its old membership lives) are one member, as
// the assignment counts them, shown with the longest TTL and the largest
// count announced among them.
func memberRows(ms []Member, owned map[string]int) []MemberRow {
	var out []MemberRow
	at := make(map[string]int, len(ms))
	for _, m := range ms {
		if i, ok := at[m.ID]; ok {
			out[i].TTL, out[i].Partitions = max(out[i].TTL, m.TTL), max(out[i].Partitions, m.Partitions)
			continue
		}
		at[m.ID] = len(out)
		out = append(out, MemberRow{ID: m.ID, TTL: m.TTL, Owned: owned[m.ID], Partitions: m.Partitions})
	}
	slices.SortFunc(out, func(a, b MemberRow) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// summarize computes Stats for p partitions over n members owning owned.
func summarize(p, n int, owned map[string]int) Stats {
	s := Stats{Members: n, Unowned: p}
	most := 0
	for _, k := range owned {
		s.Unowned -= k
		most = max(most, k)
	}
	if n > 0 {
		s.Imbalance = float64(most) / (float64(p) / float64(n))
	}
	return s
}
