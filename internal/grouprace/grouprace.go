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
	callErr := t.Errorf
	if lenient {
		callErr = t.Logf
	}
	const group, name, key = "race/g", "0", "race/g/0"
	bg := context.Background()
	a, err := ca.JoinGroup(bg, group, "a", time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cb.JoinGroup(bg, group, bID, time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		grants []grant
		aGot   []tenure.Grant // every grant a got, superseded ones included
		bGot   *tenure.Grant
		xGot   *tenure.Grant
	)
	record := func(who string, g tenure.Grant, sent time.Time) {
		mu.Lock()
		defer mu.Unlock()
		grants = append(grants, grant{who: who, g: g, sent: sent, done: time.Now()})
	}
	claim := func(c Coordinator, m partition.Member) (tenure.Grant, bool) {
		sent := time.Now()
		res, err := c.ClaimPartitions(bg, m, []string{name})
		if err != nil {
			t.Errorf("ClaimPartitions(%s) = %v", m, err)
			return tenure.Grant{}, false
		}
		if res[0].Err != nil {
			if !errors.Is(res[0].Err, tenure.ErrHeld) {
				callErr("claim for %s: %v", m, res[0].Err)
			}
			return tenure.Grant{}, false
		}
		record(m.ID+"@"+strconv.FormatUint(m.Epoch, 16), res[0].Grant, sent)
		return res[0].Grant, true
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range rounds {
		aOp, bOp, xOp := rng.IntN(4), rng.IntN(2), rng.IntN(2)
		var aRel []tenure.Grant
		switch {
		case len(aGot) == 0:
		case aOp == 0: // any of its grants: late, if superseded
			aRel = []tenure.Grant{aGot[rng.IntN(len(aGot))]}
		case aOp == 1: // its latest
			aRel = []tenure.Grant{aGot[len(aGot)-1]}
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			switch {
			case aRel != nil:
				if err := ca.ReleasePartitions(bg, a, aRel); err != nil {
					callErr("ReleasePartitions(a) = %v", err)
				}
			default:
				if g, ok := claim(ca, a); ok {
					mu.Lock()
					aGot = append(aGot, g)
					mu.Unlock()
				}
			}
		})
		wg.Go(func() {
			switch {
			case bOp == 0 && bGot != nil:
				if err := cb.ReleasePartitions(bg, b, []tenure.Grant{*bGot}); err != nil {
					callErr("ReleasePartitions(b) = %v", err)
				}
				bGot = nil
			default:
				if g, ok := claim(cb, b); ok {
					bGot = &g
				}
			}
		})
		wg.Go(func() {
			switch {
			case xOp == 0 && xGot != nil:
				if err := cx.Release(bg, *xGot); err != nil {
					callErr("Release(x) = %v", err)
				}
				xGot = nil
			default:
				sent := time.Now()
				g, err := cx.Acquire(bg, key, xID, time.Minute)
				switch {
				case err == nil:
					record(xID, g, sent)
					xGot = &g
				case !errors.Is(err, tenure.ErrHeld) && !errors.Is(err, tenure.ErrInvalidKey):
					callErr("Acquire(x) = %v", err)
				}
			}
		})
		wg.Wait()
		var holders []string
		if len(aGot) > 0 {
			lost, err := ca.CheckPartitions(bg, a, aGot)
			if err != nil {
				t.Fatalf("round %d: CheckPartitions(a) = %v", round, err)
			}
			if len(lost) < len(aGot) {
				holders = append(holders, fmt.Sprintf("a (%d of its %d grants not lost)", len(aGot)-len(lost), len(aGot)))
			}
		}
		if bGot != nil {
			lost, err := cb.CheckPartitions(bg, b, []tenure.Grant{*bGot})
			if err != nil {
				t.Fatalf("round %d: CheckPartitions(b) = %v", round, err)
			}
			if len(lost) == 0 {
				holders = append(holders, fmt.Sprintf("b (token %d)", bGot.Token))
			}
		}
		if xGot != nil {
			if l, held, err := cx.Leader(bg, key); err == nil && held && l.Holder == xGot.Holder && l.Token == xGot.Token {
				holders = append(holders, fmt.Sprintf("x (token %d)", xGot.Token))
			}
		}
		if len(holders) > 1 {
			t.Fatalf("round %d: %d holders of %s at once: %v", round, len(holders), key, holders)
		}
	}
	seen := map[uint64]string{}
	for i, g := range grants {
		if w, ok := seen[g.g.Token]; ok {
			t.Errorf("token %d granted twice: to %s and %s", g.g.Token, w, g.who)
		}
		seen[g.g.Token] = g.who
		for _, h := range grants[:i] {
			if h.done.Before(g.sent) && g.g.Token <= h.g.Token {
				t.Errorf("token went back: %s got %d, sent after %s got %d", g.who, g.g.Token, h.who, h.g.Token)
			}
		}
	}
	t.Logf("%d rounds, %d grants (a: %d)", rounds, len(grants), len(aGot))
}
