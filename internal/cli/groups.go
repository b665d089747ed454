package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// groupFinder finds the partition groups under a key prefix and reads
// their tables, for tenure status --prefix --partitions and the page of
// tenure server --http. A group is found through its partition keys: the
// parent of a key the coordinator lists under the prefix is a group when it
// has live members. (Coordinators that do not list partition keys, such
// as PostgreSQL's, show no groups.) A group found once stays shown, with
// every partition seen owned once, so that partitions and groups left
// without an owner are shown unowned rather than disappearing.
type groupFinder struct {
	// names are the partition names of every group (--partitions,
	// --names); nil means the names seen owned.
	names []string

	mu   sync.Mutex
	seen map[string]map[string]bool // group -> partition names seen owned
}

// list reads the table of every group under prefix from c, sorted by
// group.
func (f *groupFinder) list(ctx context.Context, c tenure.Coordinator, prefix string) ([]partition.Table, error) {
	l, canList := c.(tenure.Lister)
	if _, ok := c.(tenure.GroupCoordinator); !ok || !canList {
		return nil, fmt.Errorf("the coordinator %T cannot list partition groups", c)
	}
	gs, err := l.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	return f.tables(ctx, c, gs)
}

// tables reads from c the table of every group that a key of gs, the live
// grants under a prefix, is a partition of, and of every group found
// before, sorted by group.
func (f *groupFinder) tables(ctx context.Context, c tenure.Coordinator, gs []tenure.Grant) ([]partition.Table, error) {
	f.mu.Lock()
	if f.seen == nil {
		f.seen = make(map[string]map[string]bool)
	}
	owned := make(map[string]map[string]bool) // candidate group -> names owned now
	for g := range f.seen {
		owned[g] = map[string]bool{}
	}
	f.mu.Unlock()
	for _, g := range gs {
		i := strings.LastIndexByte(g.Key, '/')
		if i <= 0 || tenure.ValidateGroup(g.Key[:i], 1) != nil {
			continue
		}
		if owned[g.Key[:i]] == nil {
			owned[g.Key[:i]] = map[string]bool{}
		}
		owned[g.Key[:i]][g.Key[i+1:]] = true
	}
	var out []partition.Table
	for _, group := range slices.Sorted(maps.Keys(owned)) {
		t, err := partition.ReadTable(ctx, c, group, f.namesOf(group, owned[group], false))
		if err != nil {
			return nil, err
		}
		if len(t.Members) > 0 || f.known(group) {
			f.namesOf(group, owned[group], true)
			out = append(out, t)
		}
	}
	return out, nil
}

// namesOf returns the partition names of group: f.names, or the names
// seen owned before and now; keep records those now owned as seen.
func (f *groupFinder) namesOf(group string, now map[string]bool, keep bool) []string {
	if f.names != nil {
		return f.names
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	all := maps.Clone(now)
	maps.Copy(all, f.seen[group])
	if keep {
		f.seen[group] = all
	}
	return sortNames(slices.Collect(maps.Keys(all)))
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
