// Package grouprace races re-claims of one partition against late
// releases, other members' claims and single-key Acquires of its key, on
// any coordinator with both APIs, and checks that one holder at most holds
// it and that its tokens never repeat or go back. Tests of each backend run
// it on a real server.
package grouprace

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// Coordinator is what the race drives: both APIs.
type Coordinator interface {
	tenure.Coordinator
	partition.Coordinator
}

// grant is one grant of the race's key, with when its call was
// sent and answered.
type grant struct {
	who        string
	g          tenure.Grant
	sent, done time.Time
}

// The race's group, partition and the partition's key.
const group, name, key = "race/g", "0", "race/g/0"

// ReclaimRace races, for rounds, on partition "0" of group
// "race/g": member a re-claiming it (superseding its own grants) and
// releasing any of its grants, the oldest included (a release that arrives
// late); member b, whose ID is bID (a's own ID: a second process of one
// identity), claiming and releasing it; and a single-key holder xID
// acquiring and releasing its key. Each round sends one call per actor at
// once, then checks, with nothing in flight: that at most one of a, b, x
// holds the partition (a's and b's CheckPartitions of every grant they got,
// x's Leader), and, over the whole run, that no token was granted twice and
// that a grant sent after another was answered has a greater token. A
// call that fails fails the test, unless lenient (a backend whose reads may
// be stale refuses some calls for conflicts): then it is logged.
func ReclaimRace(t testing.TB, ca, cb, cx Coordinator, bID, xID string, rounds int, lenient bool) {
	t.Helper()
	r := newRacer(t, ca, cb, cx, bID, xID, lenient)
	for round := range rounds {
		r.round()
		r.checkHolders(round)
	}
	r.checkTokens()
	t.Logf("%d rounds, %d grants (a: %d)", rounds, len(r.grants), len(r.aGot))
}

// racer is one ReclaimRace: its three actors and what they were granted.
// Each actor's grants are written by its own goroutine during a round and
// read between rounds; grants and aGot are also guarded by mu.
type racer struct {
	t          testing.TB
	callErr    func(format string, args ...any) // t.Errorf, or t.Logf when lenient
	ca, cb, cx Coordinator
	a, b       partition.Member
	xID        string
	rng        *rand.Rand
	bg         context.Context

	mu     sync.Mutex
	grants []grant
	aGot   []tenure.Grant // every grant a got, superseded ones included
	bGot   *tenure.Grant
	xGot   *tenure.Grant
}

// newRacer makes members a (on ca) and b (ID bID, on cb) join the group.
func newRacer(t testing.TB, ca, cb, cx Coordinator, bID, xID string, lenient bool) *racer {
	t.Helper()
	r := &racer{t: t, callErr: t.Errorf, ca: ca, cb: cb, cx: cx, xID: xID,
		rng: rand.New(rand.NewPCG(1, 2)), bg: context.Background()}
	if lenient {
		r.callErr = t.Logf
	}
	var err error
	if r.a, err = ca.JoinGroup(r.bg, group, "a", time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	if r.b, err = cb.JoinGroup(r.bg, group, bID, time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	return r
}

// record adds g, whose call was sent at sent and is answered now, to the
// grants checked at the end.
func (r *racer) record(who string, g tenure.Grant, sent time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.grants = append(r.grants, grant{who: who, g: g, sent: sent, done: time.Now()})
}

// claim claims the partition for m on c, and records the grant.
func (r *racer) claim(c Coordinator, m partition.Member) (tenure.Grant, bool) {
	sent := time.Now()
	res, err := c.ClaimPartitions(r.bg, m, []string{name})
	if err != nil {
		r.t.Errorf("ClaimPartitions(%s) = %v", m, err)
		return tenure.Grant{}, false
	}
	if res[0].Err != nil {
		if !errors.Is(res[0].Err, tenure.ErrHeld) {
			r.callErr("claim for %s: %v", m, res[0].Err)
		}
		return tenure.Grant{}, false
	}
	r.record(m.ID+"@"+strconv.FormatUint(m.Epoch, 16), res[0].Grant, sent)
	return res[0].Grant, true
}

// round draws each actor's call and sends the three at once.
func (r *racer) round() {
	aOp, bOp, xOp := r.rng.IntN(4), r.rng.IntN(2), r.rng.IntN(2)
	var aRel []tenure.Grant
	switch {
	case len(r.aGot) == 0:
	case aOp == 0: // any of its grants: late, if superseded
		aRel = []tenure.Grant{r.aGot[r.rng.IntN(len(r.aGot))]}
	case aOp == 1: // its latest
		aRel = []tenure.Grant{r.aGot[len(r.aGot)-1]}
	}
	var wg sync.WaitGroup
	wg.Go(func() { r.actA(aRel) })
	wg.Go(func() { r.actB(bOp) })
	wg.Go(func() { r.actX(xOp) })
	wg.Wait()
}

// actA releases aRel, or claims the partition for a when aRel is nil.
func (r *racer) actA(aRel []tenure.Grant) {
	switch {
	case aRel != nil:
		if err := r.ca.ReleasePartitions(r.bg, r.a, aRel); err != nil {
			r.callErr("ReleasePartitions(a) = %v", err)
		}
	default:
		if g, ok := r.claim(r.ca, r.a); ok {
			r.mu.Lock()
			r.aGot = append(r.aGot, g)
			r.mu.Unlock()
		}
	}
}

// actB releases b's grant (op 0, when it has one) or claims the partition
// for b.
func (r *racer) actB(op int) {
	switch {
	case op == 0 && r.bGot != nil:
		if err := r.cb.ReleasePartitions(r.bg, r.b, []tenure.Grant{*r.bGot}); err != nil {
			r.callErr("ReleasePartitions(b) = %v", err)
		}
		r.bGot = nil
	default:
		if g, ok := r.claim(r.cb, r.b); ok {
			r.bGot = &g
		}
	}
}

// actX releases x's grant (op 0, when it has one) or acquires the key for
// x.
func (r *racer) actX(op int) {
	switch {
	case op == 0 && r.xGot != nil:
		if err := r.cx.Release(r.bg, *r.xGot); err != nil {
			r.callErr("Release(x) = %v", err)
		}
		r.xGot = nil
	default:
		sent := time.Now()
		g, err := r.cx.Acquire(r.bg, key, r.xID, time.Minute)
		switch {
		case err == nil:
			r.record(r.xID, g, sent)
			r.xGot = &g
		case !errors.Is(err, tenure.ErrHeld) && !errors.Is(err, tenure.ErrInvalidKey):
			r.callErr("Acquire(x) = %v", err)
		}
	}
}

// checkHolders fails the test when more than one of a, b and x holds the
// partition after round.
func (r *racer) checkHolders(round int) {
	r.t.Helper()
	var holders []string
	if len(r.aGot) > 0 {
		lost, err := r.ca.CheckPartitions(r.bg, r.a, r.aGot)
		if err != nil {
			r.t.Fatalf("round %d: CheckPartitions(a) = %v", round, err)
		}
		if len(lost) < len(r.aGot) {
			holders = append(holders, fmt.Sprintf("a (%d of its %d grants not lost)", len(r.aGot)-len(lost), len(r.aGot)))
		}
	}
	if r.bGot != nil {
		lost, err := r.cb.CheckPartitions(r.bg, r.b, []tenure.Grant{*r.bGot})
		if err != nil {
			r.t.Fatalf("round %d: CheckPartitions(b) = %v", round, err)
		}
		if len(lost) == 0 {
			holders = append(holders, fmt.Sprintf("b (token %d)", r.bGot.Token))
		}
	}
	if r.xGot != nil {
		if l, held, err := r.cx.Leader(r.bg, key); err == nil && held && l.Holder == r.xGot.Holder && l.Token == r.xGot.Token {
			holders = append(holders, fmt.Sprintf("x (token %d)", r.xGot.Token))
		}
	}
	if len(holders) > 1 {
		r.t.Fatalf("round %d: %d holders of %s at once: %v", round, len(holders), key, holders)
	}
}

// checkTokens fails the test when a token was granted twice, or when a
// grant sent after another was answered has a token not greater than its.
func (r *racer) checkTokens() {
	r.t.Helper()
	seen := map[uint64]string{}
	for i, g := range r.grants {
		if w, ok := seen[g.g.Token]; ok {
			r.t.Errorf("token %d granted twice: to %s and %s", g.g.Token, w, g.who)
		}
		seen[g.g.Token] = g.who
		for _, h := range r.grants[:i] {
			if h.done.Before(g.sent) && g.g.Token <= h.g.Token {
				r.t.Errorf("token went back: %s got %d, sent after %s got %d", g.who, g.g.Token, h.who, h.g.Token)
			}
		}
	}
}
