package monitor

import (
	"time"

	"github.com/tenure-dev/tenure/internal/display"
	"github.com/tenure-dev/tenure/internal/termctl"

	"github.com/tenure-dev/tenure"
)

// SetLeader forwards to Config.Metrics; when leading ends, the key is
// shown free until the next poll says who holds it.
func (m *Monitor) SetLeader(key string, leading bool) {
	m.cfg.Metrics.SetLeader(key, leading)
	if leading {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.own, key)
	if v := m.keys[key]; v != nil && v.grant.Holder == m.cfg.Identity {
		v.held = false
	}
}

// SetToken forwards to Config.Metrics.
func (m *Monitor) SetToken(key string, token uint64) { m.cfg.Metrics.SetToken(key, token) }

// TermBegan records this instance's term t: the key is shown held by it,
// with the lease left read from t, and an acquired transition.
func (m *Monitor) TermBegan(t *tenure.Term) {
	m.cfg.Metrics.TermBegan(t)
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.own[t.Grant().Key], m.last[t.Grant().Key] = t, t
	v := m.keys[t.Grant().Key]
	if v == nil {
		v = &view{}
		m.keys[t.Grant().Key] = v
	}
	if v.held && v.grant.Token != t.Token() {
		m.endedLocked(t.Grant().Key, v, now, now) // the previous holder's grant, seen last
	}
	v.grant, v.held, v.listed, v.seenAt, v.lease = t.Grant(), true, false, now, lease{}
	v.lease.granted(v.grant.TTL)
	m.selfLocked(now, t, ReasonAcquired)
}

// Transition forwards to Config.Metrics and records the end of a term of
// this instance with its reason (the start is recorded by TermBegan).
func (m *Monitor) Transition(key string, kind tenure.TransitionKind) {
	m.cfg.Metrics.Transition(key, kind)
	if kind == tenure.Elected {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.last[key]; t != nil {
		m.selfLocked(time.Now(), t, termctl.Reason(kind))
	}
}

// ObserveRenew forwards to Config.Metrics.
func (m *Monitor) ObserveRenew(key string, took time.Duration, err error) {
	m.cfg.Metrics.ObserveRenew(key, took, err)
}

// selfLocked records a transition of this instance's term t.
func (m *Monitor) selfLocked(at time.Time, t *tenure.Term, reason string) {
	ev := Event{At: at, Key: t.Grant().Key, Token: t.Token(), Reason: reason, Source: SourceSelf}
	ev.Holder, ev.Instance = display.SplitIdentity(t.Grant().Holder)
	m.addLocked(ev)
}
