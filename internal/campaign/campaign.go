// Package campaign is the process-wide registry of running campaigns: which
// identity campaigns for which key (an Elector) or group (a partition
// Group) on which coordinator, in this process.
//
// Two Electors given one Holder and one Instance are one contender to the
// coordinator: each one's Acquire takes the key from the other (acquiring a
// key its holder already holds is a new grant), and both lead until their
// next renewal reports the grant lost, over and over. Two partition Groups
// of one identity are the same. Nothing at the coordinator can tell them
// apart, so the process refuses the second: tenure.Elector.Run and
// partition.Group.Run enter here and leave when they return.
//
// This is the one piece of process-wide state in tenure, because what it
// guards is process-wide: a registry per Elector could not see the other
// Elector. Two Electors of one identity in two processes cannot be seen
// from either; Config.Instance's documentation forbids that.
package campaign

import (
	"reflect"
	"sync"
)

// Kind is what a campaign is for: a key or a group, so that an Elector for
// key "jobs" and a partition Group "jobs" are not mistaken for each other.
type Kind string

// The kinds of campaign.
const (
	Key   Kind = "key"
	Group Kind = "group"
)

// entry is one running campaign.
type entry struct {
	coordinator    any // nil for a coordinator value that is not comparable
	kind           Kind
	name, identity string
}

var (
	mu      sync.Mutex
	running = map[entry]bool{}
)

// Enter records that identity campaigns for name (of kind) on coordinator,
// and returns the function that removes the record, to be called when the
// campaign ends. It reports false, and records nothing, when the same
// identity already campaigns for the same name on the same coordinator
// value in this process. (Two coordinator values that reach one backend
// are not seen as one; a coordinator of a type that cannot be compared
// counts as the same as every other such one.)
func Enter(coordinator any, kind Kind, name, identity string) (leave func(), ok bool) {
	if v := reflect.ValueOf(coordinator); coordinator != nil && !v.Comparable() {
		coordinator = nil
	}
	e := entry{coordinator: coordinator, kind: kind, name: name, identity: identity}
	mu.Lock()
	defer mu.Unlock()
	if running[e] {
		return nil, false
	}
	running[e] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			delete(running, e)
		})
	}, true
}
