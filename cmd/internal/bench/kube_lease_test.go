package bench

import (
	"strconv"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// A leaseRead is one read of a Lease in a leaseLog test: sent at ms
// milliseconds from the kill, it returned resourceVersion rv held by
// holder (rv 0: no Lease), renewed in second sec of the wall clock.
type leaseRead struct {
	ms     int
	rv     int
	holder string
	sec    int
}

// TestKubeFloor: the failover floor on Kubernetes is a lower bound of when
// the old leader's lease can end, whatever the order and lateness of what
// the benchmark sees, and it still catches a successor that acts before the
// old leader's last write has aged a whole lease. The first two cases are
// the false failures of the earlier floor (its own first sight of the old
// leader's last write, plus the duration, less 100ms), replayed from runs
// of TestKube under load (TTL 3s); old is the floor it computed.
func TestKubeFloor(t *testing.T) {
	const ttl = 3 * time.Second
	kill := boottime.Instant(50_000_000_000)
	at := func(ms int) boottime.Instant { return kill.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name     string
		clientGo bool // versions are client-go's records
		reads    []leaseRead
		old      string // the killed leader
		acted    int    // the successor acted, ms from the kill
		floor    int    // want the floor, ms from the kill; -1: none known
		early    bool
		was      int // the earlier floor, ms from the kill (0: it judged right)
	}{{
		// The earlier floor read the Lease with tenure's own coordinator,
		// whose rule dates a reply older than the newest version it has
		// seen at the reply's arrival: a read sent 2436ms after the kill
		// returned version 113 (the old leader's) after the watch had
		// delivered version 120 (the successor's acquisition), and the
		// floor became that read + 2.9s, 5336ms. The old leader last
		// wrote version 113 after -940ms.
		name:  "a reply that arrives after the successor's write",
		reads: []leaseRead{{-2960, 110, "a", 0}, {-2950, 111, "a", 0}, {-1950, 112, "a", 0}, {-940, 112, "a", 0}, {-925, 113, "a", 0}, {2300, 113, "a", 0}, {2436, 120, "b", 0}, {2520, 120, "b", 0}},
		old:   "a", acted: 2514, floor: 2060, was: 5336,
	}, {
		// Under load a watch event comes late (300ms here, so that the
		// earlier floor's first sight of version 41 was the read sent just
		// before the kill: 2897ms); a tenure successor that saw 41 when it
		// was committed acts 3.03s later, at 2792ms.
		name:  "a watch that delivers the last write late",
		reads: []leaseRead{{-650, 40, "a", 0}, {-250, 40, "a", 0}, {-238, 41, "a", 0}, {-3, 41, "a", 0}, {2700, 41, "a", 0}, {2780, 44, "b", 0}},
		old:   "a", acted: 2792, floor: 2750, was: 2897,
	}, {
		// A renewal the old leader sent before the kill lands after it:
		// the successor must wait for it too; one that counts from the
		// version before it is early.
		name:  "a renewal that lands after the kill",
		reads: []leaseRead{{-700, 7, "a", 0}, {-690, 8, "a", 0}, {30, 8, "a", 0}, {40, 9, "a", 0}, {2600, 9, "a", 0}, {2610, 12, "b", 0}},
		old:   "a", acted: 2605, floor: 3030, early: true,
	}, {
		name:  "the successor's own renewals do not count",
		reads: []leaseRead{{-500, 7, "a", 0}, {-400, 8, "a", 0}, {2000, 8, "a", 0}, {2620, 12, "b", 0}, {2900, 13, "b", 0}, {3400, 14, "b", 0}},
		old:   "a", acted: 2630, floor: 2500,
	}, {
		name:  "a version older than the one read before it is ignored",
		reads: []leaseRead{{-500, 7, "a", 0}, {-400, 8, "a", 0}, {2000, 12, "b", 0}, {2010, 8, "a", 0}},
		old:   "a", acted: 2630, floor: 2500,
	}, {
		name:  "a version the first read returned has no known write time",
		reads: []leaseRead{{-500, 8, "a", 0}, {2000, 8, "a", 0}, {2010, 12, "b", 0}},
		old:   "a", acted: 2020, floor: -1,
	}, {
		name:  "a Lease created while the log reads it",
		reads: []leaseRead{{-900, 0, "", 0}, {-880, 3, "a", 0}, {2000, 5, "b", 0}},
		old:   "a", acted: 2120, floor: 2100,
	}, {
		// client-go's leader renews every 400ms (RetryPeriod at TTL 3s),
		// but its contenders compare renewTime in whole seconds: versions
		// 52 and 53 renew in second 11, as 51 did, and do not restart
		// their wait. A contender that saw 51 at once acts 3s later, before
		// 53 is 3s old (in a run of TestKube under load: acted 2280ms, a
		// floor from version 53 2942ms). The earlier floor counted from its
		// first sight of 53, at -95ms.
		name:     "client-go's renewals within one second",
		clientGo: true,
		reads:    []leaseRead{{-930, 50, "a", 10}, {-920, 50, "a", 10}, {-905, 51, "a", 11}, {-500, 51, "a", 11}, {-490, 52, "a", 11}, {-95, 53, "a", 11}, {2100, 53, "a", 11}, {2290, 60, "b", 13}},
		old:      "a", acted: 2280, floor: 2080, was: 2805,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := resourceVersion
			if tc.clientGo {
				id = clientGoRecord
			}
			g := newLeaseLog(nil, "l", id)
			for _, r := range tc.reads {
				g.observe(at(r.ms), testLease(r, ttl))
			}
			until, ok := g.until(tc.old)
			if tc.floor < 0 {
				if ok {
					t.Fatalf("until(%q) = kill+%s; want none known", tc.old, until.Sub(kill))
				}
				return
			}
			if !ok || until != at(tc.floor) {
				t.Fatalf("until(%q) = kill+%s, %v; want kill+%dms", tc.old, until.Sub(kill), ok, tc.floor)
			}
			if o := judge(kill, at(tc.acted), until); o.early != tc.early {
				t.Errorf("judge(acted kill+%dms, floor kill+%dms).early = %v; want %v", tc.acted, tc.floor, o.early, tc.early)
			}
			if tc.was != 0 && !judge(kill, at(tc.acted), at(tc.was)).early {
				t.Errorf("the earlier floor kill+%dms does not judge kill+%dms early: not the false failure this case replays", tc.was, tc.acted)
			}
		})
	}
}

// testLease is the Lease r returned, held for ttl; nil for rv 0.
func testLease(r leaseRead, ttl time.Duration) *coordv1.Lease {
	if r.rv == 0 {
		return nil
	}
	secs := int32(ttl / time.Second)
	renewed := metav1.NewMicroTime(time.Unix(1_800_000_000+int64(r.sec), int64(r.rv)*1000))
	l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", ResourceVersion: strconv.Itoa(r.rv)}}
	l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &secs, &renewed
	if r.holder != "" {
		l.Spec.HolderIdentity = &r.holder
	}
	return l
}
