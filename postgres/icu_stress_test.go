package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"
)

// stressNames sort differently by bytes and by ICU's en-US collation
// ("B" < "a" < "ab" < "a-b" by bytes; "_e" < "0" < "9" < "10" < "a" <
// "a-b" < "ab" < "B" in en-US).
var stressNames = []string{"a", "B", "c", "D", "_e", "0", "10", "9", "a-b", "ab", "Z", "z"}

// stressLog collects the calls of TestClaimsReleasesAcquiresUnderICU.
type stressLog struct {
	mu       sync.Mutex
	tokens   map[string]map[uint64]string // by name: token → holder, this round
	last     map[string]uint64            // by name: the greatest token of the rounds before
	refused  int
	deadlock int
	errs     []string
}

func (l *stressLog) granted(who string, g tenure.Grant) {
	l.mu.Lock()
	defer l.mu.Unlock()
	name := g.Key[strings.LastIndexByte(g.Key, '/')+1:]
	if l.tokens[name] == nil {
		l.tokens[name] = map[uint64]string{}
	}
	if w, ok := l.tokens[name][g.Token]; ok {
		l.errs = append(l.errs, fmt.Sprintf("token %d of %s granted to %s and to %s", g.Token, g.Key, w, who))
	}
	l.tokens[name][g.Token] = who
}

func (l *stressLog) failed(what string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case isSerializationFailure(err):
		l.refused++ // a claim refused, each time it ran, for rows changed after its snapshot
		return
	case isDeadlock(err):
		l.deadlock++
	}
	l.errs = append(l.errs, fmt.Sprintf("%s: %v", what, err))
}

// endRound checks that every token of the round is above every token of
// the rounds before, for its partition (calls of one round overlap; of two
// rounds, never).
func (l *stressLog) endRound(round int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, toks := range l.tokens {
		high := l.last[name]
		for tok, who := range toks {
			if tok <= l.last[name] {
				l.errs = append(l.errs, fmt.Sprintf("round %d: %s granted partition %s token %d, not above %d granted in an earlier round", round, who, name, tok, l.last[name]))
			}
			high = max(high, tok)
		}
		l.last[name] = high
	}
	l.tokens = map[string]map[uint64]string{}
}

// stressMember is one member of the stress test: its coordinator, its
// membership, the grants it holds and every grant it was given.
type stressMember struct {
	who  string
	c    *postgres.Coordinator
	m    partition.Member
	held map[string]tenure.Grant
	all  []tenure.Grant
	rng  *rand.Rand
}

// act claims a random subset of the partitions, in a random order, then
// releases a random subset of every grant it was given (stale ones too),
// in a random order.
func (s *stressMember) act(ctx context.Context, l *stressLog) {
	names := make([]string, 0, len(stressNames))
	for _, i := range s.rng.Perm(len(stressNames))[:4+s.rng.IntN(5)] {
		names = append(names, stressNames[i])
	}
	res, err := s.c.ClaimPartitions(ctx, s.m, names)
	if err != nil {
		l.failed(fmt.Sprintf("%s claims %v", s.who, names), err)
	}
	for _, r := range res {
		var held *tenure.HeldError
		switch {
		case r.Err == nil:
			l.granted(s.who, r.Grant)
			s.held[r.Grant.Key] = r.Grant
			s.all = append(s.all, r.Grant)
		case !errors.As(r.Err, &held):
			l.failed(fmt.Sprintf("%s claims %v", s.who, names), r.Err)
		}
	}
	var rel []tenure.Grant
	for _, g := range s.all {
		if s.rng.IntN(3) == 0 {
			rel = append(rel, g)
		}
	}
	s.rng.Shuffle(len(rel), func(a, b int) { rel[a], rel[b] = rel[b], rel[a] })
	if err := s.c.ReleasePartitions(ctx, s.m, rel); err != nil {
		l.failed(fmt.Sprintf("%s releases %d grants", s.who, len(rel)), err)
	}
	for _, g := range rel {
		if s.held[g.Key] == g {
			delete(s.held, g.Key)
		}
	}
}

// TestClaimsReleasesAcquiresUnderICU: in a database whose collation
// is ICU's en-US, three members, each on a pool of its own (and a second
// goroutine of one of them, on another pool), claim random
// subsets of twelve partitions whose names sort differently by bytes and
// by the collation, in random orders, and release random subsets of every
// grant they were given (superseded and already released ones too) in
// random orders, while a single-key holder acquires a random partition's
// key and releases it the next round. 40 rounds, each of five calls at
// once. No call may fail for a deadlock (SQLSTATE 40P01), or at all,
// except claims refused for concurrent changes each time they ran, and
// HeldErrors. After each round, with nothing in flight: each partition
// has at most one holder among the members' grants their CheckPartitions
// keeps and the single key's grant, and every token granted in the round
// is new and above those of the rounds before.
func TestClaimsReleasesAcquiresUnderICU(t *testing.T) {
	t.Parallel()
	dsn := newICUDatabase(t, "en-US")
	ctx := ctxFor(t, 2*time.Minute)
	const rounds = 40
	l := &stressLog{tokens: map[string]map[uint64]string{}, last: map[string]uint64{}}
	var members []*stressMember
	for i := range 3 {
		c := open(t, dsn)
		m, err := c.JoinGroup(ctx, "jobs", fmt.Sprintf("m%d", i), time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, &stressMember{who: m.ID, c: c, m: m, held: map[string]tenure.Grant{}, rng: rand.New(rand.NewPCG(uint64(i), 9))})
	}
	// m0's twin: a second goroutine of member m0 (one membership), on a
	// pool of its own, whose claims supersede m0's grants and whose
	// releases name them, at once with m0's own calls.
	members = append(members, &stressMember{who: "m0's twin", c: open(t, dsn), m: members[0].m, held: map[string]tenure.Grant{}, rng: rand.New(rand.NewPCG(5, 9))})
	cx := open(t, dsn)
	xrng := rand.New(rand.NewPCG(7, 7))
	var x *tenure.Grant
	for round := range rounds {
		var wg sync.WaitGroup
		for _, s := range members {
			wg.Go(func() { s.act(ctx, l) })
		}
		wg.Go(func() {
			if x != nil {
				if err := cx.Release(ctx, *x); err != nil {
					l.failed("x releases "+x.Key, err)
				}
				x = nil
			}
			key := "jobs/" + stressNames[xrng.IntN(len(stressNames))]
			g, err := cx.Acquire(ctx, key, "x", time.Minute)
			var held *tenure.HeldError
			switch {
			case err == nil:
				l.granted("x", g)
				x = &g
			case !errors.As(err, &held):
				l.failed("x acquires "+key, err)
			}
		})
		wg.Wait()
		l.endRound(round)
		holders := map[string][]string{}
		if x != nil {
			holders[x.Key] = append(holders[x.Key], fmt.Sprintf("x (%d)", x.Token))
		}
		for _, s := range members {
			var gs []tenure.Grant
			for _, g := range s.held {
				gs = append(gs, g)
			}
			lost, err := s.c.CheckPartitions(ctx, s.m, gs)
			if err != nil {
				t.Fatalf("round %d: %s's check: %v", round, s.who, err)
			}
			for _, g := range lost {
				delete(s.held, g.Key)
			}
			for _, g := range s.held {
				holders[g.Key] = append(holders[g.Key], fmt.Sprintf("%s (%d)", s.who, g.Token))
			}
		}
		for key, hs := range holders {
			if len(hs) > 1 {
				t.Errorf("round %d: %s held by %v at once", round, key, hs)
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	granted := 0
	for _, s := range members {
		granted += len(s.all)
	}
	t.Logf("%d rounds: %d partition grants, %d claims refused for concurrent changes, %d deadlocks, %d other failures", rounds, granted, l.refused, l.deadlock, len(l.errs)-l.deadlock)
	if granted < rounds {
		t.Errorf("only %d partitions granted in %d rounds: too few to contend", granted, rounds)
	}
	for i, e := range l.errs {
		if i == 10 {
			t.Errorf("… and %d more", len(l.errs)-10)
			break
		}
		t.Error(e)
	}
}
