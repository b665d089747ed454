package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// ownerLog records every membership joined and every grant claimed by the
// members of a test, and reports what a fence could not tell apart.
type ownerLog struct {
	mu     sync.Mutex
	epochs map[uint64]string            // epoch → member that joined with it
	tokens map[string]map[uint64]string // key → token → "member@epoch" granted it
	errs   []string
}

func newOwnerLog() *ownerLog {
	return &ownerLog{epochs: map[uint64]string{}, tokens: map[string]map[uint64]string{}}
}

func (l *ownerLog) joined(m partition.Member) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.epochs[m.Epoch]; ok {
		l.errs = append(l.errs, fmt.Sprintf("epoch %d given to %q, then again to %q", m.Epoch, prev, m.ID))
	}
	l.epochs[m.Epoch] = m.ID
}

func (l *ownerLog) granted(m partition.Member, g tenure.Grant) {
	l.mu.Lock()
	defer l.mu.Unlock()
	who := fmt.Sprintf("%s@%d", m.ID, m.Epoch)
	byToken := l.tokens[g.Key]
	if byToken == nil {
		byToken = map[uint64]string{}
		l.tokens[g.Key] = byToken
	}
	if prev, ok := byToken[g.Token]; ok && prev != who {
		l.errs = append(l.errs, fmt.Sprintf("%s token %d granted to %s and to %s: two owners a fence cannot tell apart", g.Key, g.Token, prev, who))
	}
	byToken[g.Token] = who
}

func (l *ownerLog) violations() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errs...)
}

// runMember joins group "jobs" as id and, until ctx ends, claims every
// partition, checks and renews; when its membership is lost (its row
// deleted by a reset), it joins again. It logs every epoch and grant,
// and counts its grants in claims.
func runMember(ctx context.Context, c partition.Coordinator, id string, names []string, log *ownerLog, claims *atomic.Int64) {
	var m partition.Member
	var owned []tenure.Grant
	for ctx.Err() == nil {
		if m.Epoch == 0 {
			var err error
			if m, err = c.JoinGroup(ctx, "jobs", id, 3*time.Second, len(names)); err != nil {
				time.Sleep(20 * time.Millisecond) // a table dropped under the join
				continue
			}
			log.joined(m)
			owned = nil
		}
		// As the partition runner does, claim only what it does not own:
		// a claim of an owned partition grants it again, with a new token.
		res, err := c.ClaimPartitions(ctx, m, unowned(names, owned))
		if errors.Is(err, tenure.ErrLost) {
			m.Epoch = 0
			continue
		}
		for _, r := range res {
			if r.Err == nil {
				log.granted(m, r.Grant)
				owned = append(owned, r.Grant)
				claims.Add(1)
			}
		}
		lost, err := c.CheckPartitions(ctx, m, owned)
		if errors.Is(err, tenure.ErrLost) {
			m.Epoch = 0
			continue
		}
		owned = slices.DeleteFunc(owned, func(g tenure.Grant) bool { return slices.Contains(lost, g) })
		if _, err := c.RenewMember(ctx, m); errors.Is(err, tenure.ErrLost) {
			m.Epoch = 0
			continue
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// unowned returns the names of the partitions owned does not hold.
func unowned(names []string, owned []tenure.Grant) []string {
	var out []string
	for _, n := range names {
		if !slices.ContainsFunc(owned, func(g tenure.Grant) bool { return strings.HasSuffix(g.Key, "/"+n) }) {
			out = append(out, n)
		}
	}
	return out
}

// TestEpochsNeverRepeatWhenGroupTablesReset: an operator truncates (with
// RESTART IDENTITY) or drops each group table alone, then both, while
// members run. A new membership must never get the epoch of an earlier one
// (a partition row names its owner by epoch: a repeated epoch makes a new
// member the owner of a live member's partition, with the same token), and
// no partition's token may be granted to two memberships.
func TestEpochsNeverRepeatWhenGroupTablesReset(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	pool := newPool(t, dsn)
	names := []string{"0", "1", "2", "3", "4", "5"}
	log := newOwnerLog()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	claims := make([]atomic.Int64, 3)
	for i := range claims {
		c := open(t, dsn)
		wg.Go(func() { runMember(ctx, c, fmt.Sprintf("m%d#1", i), names, log, &claims[i]) })
	}
	steps := []string{
		`TRUNCATE ` + membersTable + ` RESTART IDENTITY`,
		`DROP TABLE ` + membersTable,
		`TRUNCATE ` + partitionsTable + ` RESTART IDENTITY`,
		`DROP TABLE ` + partitionsTable,
		`TRUNCATE ` + membersTable + `, ` + partitionsTable + ` RESTART IDENTITY`,
		`DROP TABLE ` + membersTable + `, ` + partitionsTable,
	}
	pause := func() { time.Sleep(400 * time.Millisecond) }
	// reset runs sql once a join has made the tables again.
	reset := func(sql string) {
		waitUntil(t, 20*time.Second, "group tables re-created", func() bool {
			var ok bool
			err := pool.QueryRow(ctxFor(t, 5*time.Second), `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL`, membersTable, partitionsTable).Scan(&ok)
			return err == nil && ok
		})
		if _, err := pool.Exec(ctxFor(t, 10*time.Second), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		pause()
	}
	pause()
	for _, sql := range steps {
		reset(sql)
		reset(sql) // the tables re-created by a join, and reset again
	}
	// The first member to claim takes every partition; the others claim
	// after a reset. On a loaded machine a member may not have had its
	// turn yet: reset both tables until each has claimed.
	idle := func() bool {
		for i := range claims {
			if claims[i].Load() == 0 {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(time.Minute); idle() && time.Now().Before(deadline); {
		reset(steps[4])
	}
	cancel()
	wg.Wait()
	for i := range claims {
		if claims[i].Load() == 0 {
			t.Errorf("member m%d#1 claimed nothing: the test proved nothing", i)
		}
	}
	for _, v := range log.violations() {
		t.Error(v)
	}
}
