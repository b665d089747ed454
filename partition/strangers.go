package partition

import (
	"errors"
	"slices"
	"time"

	"github.com/tenure-dev/tenure"
)

// A stranger is what holds a partition this member is to run when it is no
// member of the group: a single key's grant of the partition's key, or a
// record no member wrote (an etcd key without a lease, a row or Lease
// written by hand: see tenure.ForeignRecord). No member takes it over: the
// partition waits until it ends or an operator removes it.
type stranger struct {
	holder string
	token  uint64
	since  time.Time // when this holder and token were first seen
}

// strangerMsg is the warning that a partition waits for a stranger.
const strangerMsg = "a partition this member is to run is held by a record that is no member's (a single key's grant, or a record tenure did not write); it waits until the record ends or is removed"

// heldBy notes that partition n, which this member is to run, was refused
// with err (a *tenure.HeldError) at now. A holder named as this member is
// a member's only while another membership of its ID lives (a twin, see
// partition.Coordinator.JoinGroup): this member's own claims are granted
// over its own partitions, so without a twin the record is no member's
// (a single key's grant of the partition's key under this identity, or
// a record another program wrote naming it).
func (r *runner) heldBy(n string, err error, now time.Time) {
	var he *tenure.HeldError
	member := false
	if errors.As(err, &he) {
		member = slices.Contains(r.latest, he.Holder) && (he.Holder != r.g.id || r.twinned)
	}
	if he == nil || member {
		delete(r.strangers, n) // a member's: the balance hands it over
		return
	}
	if s, ok := r.strangers[n]; ok && s.holder == he.Holder && s.token == he.Token {
		return
	}
	r.strangers[n] = stranger{holder: he.Holder, token: he.Token, since: now}
}

// reportStrangers logs, as an outage (once, then a summary every
// outage.SummaryEvery, then its end), the partitions this member is to run
// that the same stranger has held for a TTL or longer (a member that has
// just joined is listed by then), with the record and the command that
// removes it. Partitions this member runs or no longer is to run are
// forgotten.
func (r *runner) reportStrangers(now time.Time) {
	var first string
	waiting := 0
	for n, s := range r.strangers {
		if r.owned[n] != nil || r.target[n] != r.g.id {
			delete(r.strangers, n)
			continue
		}
		if now.Sub(s.since) >= r.cfg.TTL {
			waiting++
			if first == "" || n < first {
				first = n
			}
		}
	}
	if waiting == 0 {
		r.strangerLog.Succeeded(r.g.log)
		return
	}
	s, key := r.strangers[first], r.g.byName[first].Key
	r.strangerLog.Failed(r.g.log, &tenure.HeldError{Key: key, Holder: s.holder, Token: s.token},
		"partition", key, "held_by", s.holder, "token", s.token, "waiting", waiting,
		"remedy", "tenure release --force --key "+key)
}
