package monitor

import (
	"cmp"
	"slices"
	"time"

	"github.com/tenure-dev/tenure"
)

// Reasons of the transitions in Status. A node's own transitions carry
// the reasons of tenure.TransitionKind.Reason; transitions of other
// holders, seen from outside, are acquired, released or expired (ended on
// a coordinator that cannot list keys, which does not say the lease left).
const (
	ReasonAcquired = "acquired" // a new grant: new holder or new token
	ReasonReleased = "released" // the grant went before its lease ran out
	ReasonExpired  = "expired"  // the grant went when its lease ran out
	ReasonEnded    = "ended"    // the grant went; the coordinator cannot say how much lease it had left
)

// Sources of the transitions in Status.
const (
	SourceSelf     = "self"     // this instance's own term, with its true reason
	SourceObserved = "observed" // another holder's, seen by polling the coordinator
)

// Status is what /status serves. Durations are integers of milliseconds,
// in fields named *_ms.
type Status struct {
	// Instance is this instance's holder identity; empty for an observer.
	Instance string `json:"instance,omitempty"`
	// Role is "leader" while this instance leads a key, "follower" when it
	// campaigns without leading, "observer" when it does not campaign.
	Role string `json:"role"`
	// Prefix is the prefix of the keys shown, when they are listed.
	Prefix string `json:"prefix"`
	// PollMs is how often the coordinator is read.
	PollMs int64 `json:"poll_ms"`
	// UpdatedAt is when the coordinator was last read.
	UpdatedAt time.Time `json:"updated_at"`
	// Error is the error of the last read, if it failed.
	Error string `json:"error,omitempty"`
	// Keys are the keys shown, sorted.
	Keys []KeyStatus `json:"keys"`
	// Transitions are the recent transitions, newest first.
	Transitions []Event `json:"transitions"`
	// Groups summarizes the partition groups shown, sorted.
	Groups []GroupStatus `json:"groups"`
	// Partitions are the rows of the partition tables, by group and
	// index; empty when there is none.
	Partitions []PartitionStatus `json:"partitions"`
}

// KeyStatus is one key in Status.
type KeyStatus struct {
	Key string `json:"key"`
	// Held is false while nobody holds the key.
	Held bool `json:"held"`
	// Holder is the holder's display name, Instance its instance id.
	Holder   string `json:"holder,omitempty"`
	Instance string `json:"instance,omitempty"`
	// Token is the fencing token of the live grant.
	Token uint64 `json:"token,omitempty"`
	// LeaseLeftMs is the time left: to this instance's local deadline when
	// it holds the key, else on the lease as the coordinator last reported
	// it, counted down since. Absent while the key is free, or when the
	// coordinator cannot list keys (it does not report the lease left).
	LeaseLeftMs *int64 `json:"lease_left_ms,omitempty"`
	// Mine is true while this instance holds the key.
	Mine bool `json:"mine"`
}

// Event is one transition in Status.
type Event struct {
	At       time.Time `json:"at"`
	Key      string    `json:"key"`
	Holder   string    `json:"holder"`
	Instance string    `json:"instance,omitempty"`
	Token    uint64    `json:"token"`
	// Reason is acquired, released, deadline, lost or fenced for this
	// instance's own terms; acquired, released or expired for others'.
	Reason string `json:"reason"`
	// Source is "self" or "observed".
	Source string `json:"source"`
}

// Status returns the view now.
func (m *Monitor) Status() Status {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Status{
		Instance: m.cfg.Identity, Role: m.roleLocked(), Prefix: m.cfg.Prefix,
		PollMs: m.cfg.Poll.Milliseconds(), UpdatedAt: m.polled,
		Keys: []KeyStatus{}, Transitions: make([]Event, 0, len(m.events)), Groups: []GroupStatus{}, Partitions: []PartitionStatus{},
	}
	if m.err != nil {
		s.Error = m.err.Error()
	}
	for k, v := range m.keys {
		ks := KeyStatus{Key: k, Held: v.held}
		if v.held {
			ks.Holder, ks.Instance = tenure.SplitIdentity(v.grant.Holder)
			ks.Token = v.grant.Token
			if left, ok := v.left(now); ok {
				ks.LeaseLeftMs = ms(left)
			}
		}
		if t := m.own[k]; t != nil && t.Check() == nil {
			ks.Held, ks.Mine, ks.Token = true, true, t.Token()
			ks.Holder, ks.Instance = tenure.SplitIdentity(t.Holder())
			ks.LeaseLeftMs = ms(max(t.Remaining(), 0))
		}
		s.Keys = append(s.Keys, ks)
	}
	slices.SortFunc(s.Keys, func(a, b KeyStatus) int { return cmp.Compare(a.Key, b.Key) })
	for i := len(m.events) - 1; i >= 0; i-- {
		s.Transitions = append(s.Transitions, m.events[i])
	}
	m.partitionsLocked(&s, now)
	return s
}

// roleLocked is Status.Role.
func (m *Monitor) roleLocked() string {
	switch {
	case m.cfg.Identity == "":
		return "observer"
	case m.leadingLocked(), m.cfg.Leading != nil && m.cfg.Leading():
		return "leader"
	default:
		return "follower"
	}
}

// leadingLocked reports whether this instance holds a live term.
func (m *Monitor) leadingLocked() bool {
	for _, t := range m.own {
		if t.Check() == nil {
			return true
		}
	}
	return false
}

// Leading reports whether /leader answers 200: Config.Leading when set,
// else whether this instance holds a live term on any key.
func (m *Monitor) Leading() bool {
	if m.cfg.Leading != nil {
		return m.cfg.Leading()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leadingLocked()
}

// ms is d in whole milliseconds, for a *_ms field.
func ms(d time.Duration) *int64 {
	v := d.Milliseconds()
	return &v
}
