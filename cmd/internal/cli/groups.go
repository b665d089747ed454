package cli

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tenure-dev/tenure/internal/inputs"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// groupFinder finds the partition groups under a key prefix and reads
// their tables, for tenure status --prefix --partitions and the page of
// tenure server --http. A group is found through its partition keys: the
// parent of a key the coordinator lists under the prefix is a group when it
// has live members. (Coordinators that do not list partition keys, such
// as PostgreSQL's, show no groups.) Each group's table lists every
// partition, owned or not: those of the partition count its members
// announce (partition.ReadGroupTable), or the --partitions/--names given.
// A group found once stays shown, with every partition shown once, so
// that partitions and groups left without an owner are shown unowned
// rather than disappearing.
type groupFinder struct {
	// names are the partition names of every group (--partitions,
	// --names); nil means the names the group's members announce.
	names []string

	mu   sync.Mutex
	seen map[string]map[string]bool // group -> partition names shown
}

// list reads the table of every group under prefix from c, sorted by
// group.
func (f *groupFinder) list(ctx context.Context, c partition.Coordinator, prefix string) ([]partition.Table, error) {
	gs, err := c.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	return f.tables(ctx, c, gs)
}

// tables reads from c the table of every group that a key of gs, the live
// grants under a prefix, is a partition of, and of every group found
// before, sorted by group.
func (f *groupFinder) tables(ctx context.Context, c partition.Coordinator, gs []tenure.Grant) ([]partition.Table, error) {
	f.mu.Lock()
	if f.seen == nil {
		f.seen = make(map[string]map[string]bool)
	}
	groups := make(map[string]bool) // candidate groups
	for g := range f.seen {
		groups[g] = true
	}
	f.mu.Unlock()
	for _, g := range gs {
		if i := strings.LastIndexByte(g.Key, '/'); i > 0 && inputs.Group(g.Key[:i], 1) == nil {
			groups[g.Key[:i]] = true
		}
	}
	var out []partition.Table
	for _, group := range slices.Sorted(maps.Keys(groups)) {
		t, err := f.table(ctx, c, group)
		if err != nil {
			return nil, err
		}
		if len(t.Members) > 0 || f.known(group) {
			f.keep(group, t)
			out = append(out, t)
		}
	}
	return out, nil
}

// table reads group's table: for f.names, or every partition its members
// announce (with those shown before, if the members no longer say them
// all).
func (f *groupFinder) table(ctx context.Context, c partition.Coordinator, group string) (partition.Table, error) {
	if f.names != nil {
		return partition.ReadTable(ctx, c, group, f.names)
	}
	t, err := partition.ReadGroupTable(ctx, c, group)
	if err != nil {
		return t, err
	}
	f.mu.Lock()
	all := maps.Clone(f.seen[group])
	f.mu.Unlock()
	for _, r := range t.Partitions {
		delete(all, r.Partition.Name)
	}
	if len(all) == 0 {
		return t, nil
	}
	for _, r := range t.Partitions {
		all[r.Partition.Name] = true
	}
	return partition.ReadTable(ctx, c, group, sortNames(slices.Collect(maps.Keys(all))))
}

// keep records the partitions of t as shown.
func (f *groupFinder) keep(group string, t partition.Table) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen[group] == nil {
		f.seen[group] = make(map[string]bool)
	}
	for _, r := range t.Partitions {
		f.seen[group][r.Partition.Name] = true
	}
}

// known reports whether group was shown before.
func (f *groupFinder) known(group string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[group] != nil
}

// sortNames sorts partition names, numbers by value before other names.
func sortNames(names []string) []string {
	slices.SortFunc(names, func(a, b string) int {
		x, errA := strconv.Atoi(a)
		y, errB := strconv.Atoi(b)
		switch {
		case errA == nil && errB == nil:
			return x - y
		case errA == nil:
			return -1
		case errB == nil:
			return 1
		}
		return strings.Compare(a, b)
	})
	return names
}
