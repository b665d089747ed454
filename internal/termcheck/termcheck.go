// Package termcheck is the oracle of tests that run terms of one key, or
// of a group's partitions, through faults: every leader or partition
// function records its acts (the instants its Term.Check passed) in one
// Log, under the key its term leads, and the Log judges them. No term of a
// key may act after a term of that key with a greater token did (two
// holders acting at once), no two terms of a key whose functions run may
// pass Check at one instant, and no token may be run twice or by two
// holders.
//
// Times are read on each side of Check, and an act counts as later than
// another only when it certainly was (its Check began after the other's
// had returned), so that a goroutine descheduled between its Check and its
// record is never taken for an overlap.
package termcheck

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// maxKept bounds the violations a Log keeps; it counts all of them.
const maxKept = 20

// Log records the terms that run and act, per key, and the violations
// found while they do. The zero Log is not usable: call New.
type Log struct {
	origin time.Time

	mu   sync.Mutex
	keys map[string]*keyLog
	acts int
	bad  []string
	nbad int
}

// keyLog is what a Log knows of one key.
type keyLog struct {
	running map[*tenure.Term]string // terms whose function runs → who runs it
	ran     map[uint64]string       // token → who ran it (Run)
	spans   map[uint64]*span        // token → its acts
}

// span is the acts of one term: firstDone is when its first Check had
// certainly passed, lastBegun when its last one began.
type span struct {
	who                  string
	firstDone, lastBegun time.Duration
	acts                 int
}

// New returns an empty Log; its times count from now.
func New() *Log {
	return &Log{origin: time.Now(), keys: map[string]*keyLog{}}
}

func (l *Log) key(key string) *keyLog {
	k := l.keys[key]
	if k == nil {
		k = &keyLog{running: map[*tenure.Term]string{}, ran: map[uint64]string{}, spans: map[uint64]*span{}}
		l.keys[key] = k
	}
	return k
}

// failf records a violation; l.mu is held.
func (l *Log) failf(format string, args ...any) {
	l.nbad++
	if len(l.bad) < maxKept {
		l.bad = append(l.bad, fmt.Sprintf(format, args...))
	}
}

// Run records that who's function for term, which leads key, runs from
// now until the returned func is called: a token run a second time, by
// anyone, is a violation.
func (l *Log) Run(key, who string, term *tenure.Term) (done func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.key(key)
	if w, ok := k.ran[term.Token()]; ok {
		l.failf("%s: token %d run by %s and again by %s", key, term.Token(), w, who)
	}
	k.ran[term.Token()] = who
	k.running[term] = who
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(k.running, term)
	}
}

// Act is one act of who's term, which leads key: it calls term.Check and,
// if that passes, records the act and checks that no other term of key
// whose function runs (see Run) passes Check too. It reports whether
// term's Check passed.
func (l *Log) Act(key, who string, term *tenure.Term) bool {
	begun := time.Since(l.origin)
	if term.Check() != nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	done := time.Since(l.origin)
	l.acts++
	k := l.key(key)
	s := k.spans[term.Token()]
	switch {
	case s == nil:
		k.spans[term.Token()] = &span{who: who, firstDone: done, lastBegun: begun, acts: 1}
	case s.who != who:
		l.failf("%s: token %d held by %s and by %s", key, term.Token(), s.who, who)
	default:
		s.lastBegun, s.acts = begun, s.acts+1
	}
	for other, ow := range k.running {
		if other != term && other.Check() == nil {
			l.failf("%s: %s's term (token %d) and %s's (token %d) both live at %s", key, who, term.Token(), ow, other.Token(), at(done))
		}
	}
	return true
}

// Live reports whether a term of key whose function runs (see Run) passes
// Check now.
func (l *Log) Live(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for term := range l.key(key).running {
		if term.Check() == nil {
			return true
		}
	}
	return false
}

// at formats d, a time of the Log, as seconds.
func at(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

// Violations lists every pair of terms of a key of which the older acted
// after the newer had, then the violations found as terms ran and acted
// (at most maxKept of them, and how many more).
func (l *Log) Violations() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for key, k := range l.keys {
		for ot, o := range k.spans {
			for nt, n := range k.spans {
				if ot < nt && o.lastBegun > n.firstDone {
					out = append(out, fmt.Sprintf("%s: %s's term (token %d) passed Check at %s, after %s's term with token %d had at %s: two holders at once",
						key, o.who, ot, at(o.lastBegun), n.who, nt, at(n.firstDone)))
				}
			}
		}
	}
	slices.Sort(out)
	out = append(out, l.bad...)
	if l.nbad > len(l.bad) {
		out = append(out, fmt.Sprintf("… and %d more", l.nbad-len(l.bad)))
	}
	return out
}

// Verify fails t with the violations, and when no term acted at all (the
// test tested nothing).
func (l *Log) Verify(t testing.TB) {
	t.Helper()
	if v := l.Violations(); len(v) > 0 {
		if len(v) > maxKept {
			v = append(v[:maxKept], fmt.Sprintf("… and %d more", len(v)-maxKept))
		}
		t.Errorf("violations:\n  %s", strings.Join(v, "\n  "))
	}
	if l.Acts() == 0 {
		t.Error("no term acted")
	}
}

// Acts returns how many acts were recorded.
func (l *Log) Acts() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acts
}

// Terms returns how many terms acted, those of who alone when who is not
// "".
func (l *Log) Terms(who string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, k := range l.keys {
		for _, s := range k.spans {
			if who == "" || s.who == who {
				n++
			}
		}
	}
	return n
}
