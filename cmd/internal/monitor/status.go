package monitor

import (
	"cmp"
	"slices"
	"time"

	"github.com/tenure-dev/tenure/internal/display"
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
	// PollMs is how often the coordinator is read: Config.Poll, or five
	// times as long as the last read took, when that is more, up to 2 s.
	PollMs int64 `json:"poll_ms"`
	// UpdatedAt is when the coordinator was last read.
	UpdatedAt time.Time `json:"updated_at"`
	// Error is the error of the last read, if it failed.
	Error string `json:"error,omitempty"`
	// Keys are the keys shown, sorted.
	Keys []KeyStatus `json:"keys"`
	// Transitions are the recent transitions, newest first, each stamped
	// when it most likely happened (see Event.At).
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
	// Lease is what is known of the holder's lease: the time left (to
	// this instance's local deadline when it holds the key, else until the
	// lease runs out as the coordinator reported it), the TTL granted and
	// the last renewal. Absent while the key is free; the time left and
	// the renewal are absent when the coordinator cannot list keys (it
	// does not report the time left).
	Lease
	// Mine is true while this instance holds the key.
	Mine bool `json:"mine"`
}

// Event is one transition in Status.
type Event struct {
	// At is when it happened: for this instance's own terms, when the
	// Elector saw it; for others', the best estimate from the reads: an
	// expiry when the lease ran out (the latest start of a read plus the
	// time left it reported); an acquisition or a release halfway between
	// the read before (that did not see it) and the read that did, and
	// never before the end of the grant before.
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
		PollMs: m.every.Milliseconds(), UpdatedAt: m.polled,
		Keys: []KeyStatus{}, Transitions: make([]Event, 0, len(m.events)), Groups: []GroupStatus{}, Partitions: []PartitionStatus{},
	}
	if m.err != nil {
		s.Error = m.err.Error()
	}
	for k, v := range m.keys {
		s.Keys = append(s.Keys, m.keyLocked(k, v, now))
	}
	slices.SortFunc(s.Keys, func(a, b KeyStatus) int { return cmp.Compare(a.Key, b.Key) })
	for i := len(m.events) - 1; i >= 0; i-- {
		s.Transitions = append(s.Transitions, m.events[i])
	}
	// Stamps are estimates made after the fact: an expiry recorded after
	// a later event may have happened before it.
	slices.SortStableFunc(s.Transitions, func(a, b Event) int { return b.At.Compare(a.At) })
	m.partitionsLocked(&s, now)
	return s
}

// keyLocked is the status of key, last seen as v, at now.
func (m *Monitor) keyLocked(key string, v *view, now time.Time) KeyStatus {
	ks := KeyStatus{Key: key, Held: v.held}
	if v.held {
		ks.Holder, ks.Instance = display.SplitIdentity(v.grant.Holder)
		ks.Token = v.grant.Token
		ks.Lease = v.lease.status(now, m.every)
	}
	if t := m.own[key]; t != nil && t.Check() == nil {
		g := t.Grant()
		ks.Held, ks.Mine, ks.Token = true, true, g.Token
		ks.Holder, ks.Instance = display.SplitIdentity(g.Holder)
		ks.Lease = Lease{TTLLeftMs: ms(max(t.Remaining(), 0)), TTLMs: ms(g.TTL)}
		ks.renewal(now.Sub(g.Sent.Time()), g.TTL, m.every)
	}
	return ks
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
