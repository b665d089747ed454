package tenure_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

// Adversarial tests of the Elector's token path on the memory coordinator:
// faults below the client (latency between the coordinator's Sent and the
// request's arrival, replies lost after the request was applied, replies
// that arrive after the local deadline, a resignation racing a renewal), a
// rival Elector campaigning throughout, and a leaseOracle that checks every
// act of every leader against the coordinator at that instant.

// TestAcquireLatency: a's requests and replies are slow. Its
// deadline counts from before the request crossed the link, so a term never
// acts after the lease the coordinator started later; a grant whose reply
// arrives after its local deadline is never acted on. a and b take turns
// (each resigns after 1s) for 20s.
func TestAcquireLatency(t *testing.T) {
	for _, tc := range []struct {
		name           string
		request, reply time.Duration
		aLeads         bool // a gets terms at all
	}{
		{"none", 0, 0, true},
		{"request 1s", time.Second, 0, true},
		{"reply 1s", 0, time.Second, true},
		{"both 1.3s: a 70ms term", 1300 * time.Millisecond, 1300 * time.Millisecond, true},
		{"reply 2.6s: a 70ms term", 0, 2600 * time.Millisecond, true},
		{"both 1.4s: past the safe lease", 1400 * time.Millisecond, 1400 * time.Millisecond, false},
		{"reply 2.7s: past the safe lease", 0, 2700 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := memory.New()
				defer c.Close()
				o := newOracle(c, "scheduler")
				c.SetLatency("a", tc.request, tc.reply)
				cfgA := testConfig("a")
				cfgA.RequestTimeout = 10 * time.Second // so that slow replies are waited for
				stopA := runLoop(t, newElector(t, c, cfgA), o.lead("a", time.Second, nil), time.Second)
				stopB := runLoop(t, newElector(t, c, testConfig("b")), o.lead("b", time.Second, nil), time.Second)
				time.Sleep(20 * time.Second)
				c.HealAll()
				stopA()
				stopB()
				o.check(t)
				a, b := o.termsOf("a"), o.termsOf("b")
				if tc.aLeads && len(a) == 0 {
					t.Fatalf("a never led in 20s; terms:\n%s", o.describe())
				}
				if !tc.aLeads && len(a) > 0 {
					t.Fatalf("a led %d times though every reply arrived after its local deadline; terms:\n%s", len(a), o.describe())
				}
				if len(b) == 0 {
					t.Fatalf("b never led in 20s; terms:\n%s", o.describe())
				}
			})
		})
	}
}

// TestLostRepliesKeepTheEarlierDeadline: a's renewals are applied
// but their replies are lost. The coordinator keeps extending the lease; a
// must not: its term ends exactly at the deadline its last answered
// renewal gave it. Its campaign's acquisitions are applied too, replies
// lost, superseding its own grant each time; once replies flow again a
// term with a greater token begins (a's or b's), and no act of any term is
// ever unbacked by the coordinator.
func TestLostRepliesKeepTheEarlierDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		o := newOracle(c, "scheduler")
		type result struct {
			token          uint64
			deadline, done time.Time
		}
		res := make(chan result, 1)
		var once sync.Once
		during := func(term *tenure.Term) {
			once.Do(func() {
				time.Sleep(1500 * time.Millisecond) // one renewal answered, at 1s
				r := result{token: term.Token(), deadline: term.Deadline()}
				c.DropReplies("a", true)
				<-term.Context().Done()
				r.done = time.Now()
				res <- r
			})
		}
		stopA := runLoop(t, newElector(t, c, testConfig("a")), o.lead("a", 0, during), 0)
		time.Sleep(100 * time.Millisecond) // a leads
		stopB := runLoop(t, newElector(t, c, testConfig("b")), o.lead("b", 0, nil), 0)
		r := await(t, res, 30*time.Second, "the first term's result")
		time.Sleep(5 * time.Second)
		c.DropReplies("a", false)
		time.Sleep(10 * time.Second)
		stopA()
		stopB()
		o.check(t)
		if !r.done.Equal(r.deadline) {
			t.Fatalf("a's term ended %s after the deadline its last answered renewal gave it; want exactly at it", r.done.Sub(r.deadline))
		}
		later := false
		for _, h := range []string{"a", "b"} {
			for _, ot := range o.termsOf(h) {
				later = later || ot.token > r.token
			}
		}
		if !later {
			t.Fatalf("no term after a's first (token %d) within 10s of the replies flowing again; terms:\n%s", r.token, o.describe())
		}
	})
}

// TestRenewalReplyAfterDeadline: from the start of a's term, its
// first renewal (sent 1s in) is slowed so that it cannot be answered before
// the term's deadline (2.67s in): either its request arrives after the
// lease expired (so it is refused) or its reply arrives after the deadline
// (so the lease was extended, but a never hears of it in time). The term
// must end exactly at its first deadline, never extended, and b takes over
// without overlap.
func TestRenewalReplyAfterDeadline(t *testing.T) {
	for _, tc := range []struct {
		name           string
		request, reply time.Duration
	}{
		{"request arrives after the expiry", 2 * time.Second, 0},
		{"reply arrives after the deadline", 0, 2 * time.Second},
		{"reply arrives at the deadline", 0, 1670 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := memory.New()
				defer c.Close()
				o := newOracle(c, "scheduler")
				type result struct{ start, deadline, done time.Time }
				res := make(chan result, 1)
				var once sync.Once
				during := func(term *tenure.Term) {
					once.Do(func() {
						r := result{start: time.Now(), deadline: term.Deadline()}
						c.SetLatency("a", tc.request, tc.reply)
						<-term.Context().Done()
						r.done = time.Now()
						res <- r
					})
				}
				stopA := runLoop(t, newElector(t, c, testConfig("a")), o.lead("a", 0, during), 0)
				time.Sleep(100 * time.Millisecond)
				stopB := runLoop(t, newElector(t, c, testConfig("b")), o.lead("b", 0, nil), 0)
				r := await(t, res, 30*time.Second, "the first term's result")
				time.Sleep(10 * time.Second)
				c.HealAll()
				stopA()
				stopB()
				o.check(t)
				if !r.done.Equal(r.deadline) {
					t.Fatalf("a's term ended %s into it, deadline %s into it; want exactly at the deadline (never extended by the late renewal)",
						r.done.Sub(r.start), r.deadline.Sub(r.start))
				}
				if len(o.termsOf("b")) == 0 {
					t.Fatalf("b never led; terms:\n%s", o.describe())
				}
			})
		})
	}
}

// TestResignDuringRenewal: a resigns (its function returns) 1.2s
// into its term, while its renewal sent at 1s is still in flight, its
// request or its reply slowed by 400ms. The release must win: once Run has
// returned the key is b's (or free) and stays out of a's hands, the
// abandoned renewal reviving nothing.
func TestResignDuringRenewal(t *testing.T) {
	for _, tc := range []struct {
		name           string
		request, reply time.Duration
	}{
		{"request in flight", 400 * time.Millisecond, 0},
		{"reply in flight", 0, 400 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := memory.New()
				defer c.Close()
				o := newOracle(c, "scheduler")
				during := func(*tenure.Term) { c.SetLatency("a", tc.request, tc.reply) }
				ea := newElector(t, c, testConfig("a"))
				aDone := make(chan error, 1)
				go func() { aDone <- ea.Run(context.Background(), o.lead("a", 1200*time.Millisecond, during)) }()
				time.Sleep(100 * time.Millisecond)
				stopB := runLoop(t, newElector(t, c, testConfig("b")), o.lead("b", 0, nil), 0)
				if err := await(t, aDone, 30*time.Second, "a's Run"); err != nil {
					t.Fatalf("a's Run() = %v; want nil (its function returned nil)", err)
				}
				resigned := time.Now()
				c.HealAll()
				time.Sleep(time.Second)
				b := o.termsOf("b")
				if len(b) == 0 {
					t.Fatalf("b not leading 1s after a resigned; terms:\n%s", o.describe())
				}
				if took := b[0].start.Sub(resigned); took > tc.request {
					t.Fatalf("b led %s after a's Run returned; want within the release's request latency %s", took, tc.request)
				}
				time.Sleep(5 * time.Second)
				stopB()
				o.check(t)
				if a := o.termsOf("a"); len(a) != 1 {
					t.Fatalf("a had %d terms; want 1", len(a))
				}
			})
		})
	}
}
