package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// leasePoll is how long a leaseLog waits between two reads of its Lease.
const leasePoll = 10 * time.Millisecond

// A leaseLog follows one Lease for the failover benchmark's floor on
// Kubernetes, where the API server never expires a Lease: a contender
// takes it once it has seen the holder's last write unchanged for
// leaseDurationSeconds on its own clock, counted from its first sight of
// that write, and nobody sees a write before the server has committed it.
//
// What restarts a contender's wait is the implementation's to say: for
// tenure any new resourceVersion, for client-go a change of the record it
// compares (see clientGoRecord); id names a version so.
//
// The log reads the Lease every leasePoll, one read after another, for the
// whole run (a GET without resourceVersion: a consistent read). A read
// that returns an older version than a write was served before that write
// was committed, and was sent before it was served: so each version was
// written after the previous read, which returned an older one, was sent.
// For each holder the log keeps its newest version with that send time:
// the holder's lease ends no earlier than then plus the version's
// leaseDurationSeconds. This bound trusts no clock but the benchmark's,
// and no arrival time: a read's reply, or a watch event, can come late.
type leaseLog struct {
	read func(ctx context.Context) (*coordv1.Lease, error) // nil, nil: no Lease
	id   func(*coordv1.Lease) string

	mu      sync.Mutex
	polled  chan struct{} // closed, and replaced, at each read recorded
	reads   int
	sent    boottime.Instant // when the last read recorded was sent
	rv, cur string           // the resourceVersion and id it returned; "" for none
	holders map[string]leaseVersion
}

// A leaseVersion is a holder's newest version of the Lease in a leaseLog.
type leaseVersion struct {
	id    string
	after boottime.Instant // it was written after then
	known bool             // after is known: the log's first read did not return it
	ttl   time.Duration    // its leaseDurationSeconds
}

// resourceVersion is tenure's id of a version of a Lease.
func resourceVersion(l *coordv1.Lease) string { return l.ResourceVersion }

// newLeaseLog returns a log of Lease name, read with leases, whose
// versions id names. Its run reads it.
func newLeaseLog(leases coordclient.LeaseInterface, name string, id func(*coordv1.Lease) string) *leaseLog {
	return &leaseLog{
		id: id,
		read: func(ctx context.Context) (*coordv1.Lease, error) {
			l, err := leases.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return l, err
		},
		polled:  make(chan struct{}),
		holders: map[string]leaseVersion{},
	}
}

// run reads the Lease every leasePoll until ctx ends. A read that fails
// says nothing and is not recorded.
func (g *leaseLog) run(ctx context.Context) {
	for {
		sent := boottime.Now()
		if l, err := g.read(ctx); err == nil {
			g.observe(sent, l)
		}
		if sleep(ctx, leasePoll) != nil {
			return
		}
	}
}

// observe records a read sent at `sent` that returned l (nil: no Lease).
// Reads are recorded in the order they were sent, one after another. A
// version older than the last one recorded is ignored (consistent reads
// never return one; dating it after the last read would make its bound too
// late).
func (g *leaseLog) observe(sent boottime.Instant, l *coordv1.Lease) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rv, id := "", ""
	if l != nil {
		rv, id = l.ResourceVersion, g.id(l)
	}
	if g.reads > 0 && rv != "" && g.rv != "" {
		if c, err := resourceversion.CompareResourceVersion(rv, g.rv); err == nil && c < 0 {
			return
		}
	}
	if g.reads == 0 || id != g.cur {
		g.record(l, leaseVersion{id: id, after: g.sent, known: g.reads > 0})
	}
	g.reads++
	g.sent, g.rv, g.cur = sent, rv, id
	close(g.polled)
	g.polled = make(chan struct{})
}

// record keeps v, a new version, as its holder's newest.
func (g *leaseLog) record(l *coordv1.Lease, v leaseVersion) {
	if l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return
	}
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d > 0 {
		v.ttl = time.Duration(*d) * time.Second
	}
	g.holders[*l.Spec.HolderIdentity] = v
}

// until is the earliest that holder's lease can end: its newest version's
// write bound plus its duration. ok is false when the log has no version of
// holder's whose write it can bound.
func (g *leaseLog) until(holder string) (boottime.Instant, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok := g.holders[holder]
	if !ok || !v.known {
		return 0, false
	}
	return v.after.Add(v.ttl), true
}

// fresh waits until the log has recorded a read sent after fresh was
// called, and returns the holder that read found ("" for none).
func (g *leaseLog) fresh(ctx context.Context) (string, error) {
	since := boottime.Now()
	for {
		g.mu.Lock()
		if g.reads > 0 && g.sent >= since {
			holder := g.holderLocked()
			g.mu.Unlock()
			return holder, nil
		}
		polled := g.polled
		g.mu.Unlock()
		if _, err := wait(ctx, polled, 10*time.Second, "a read of the Lease"); err != nil {
			return "", err
		}
	}
}

// holderLocked is the holder of the version last read.
func (g *leaseLog) holderLocked() string {
	for h, v := range g.holders {
		if v.id == g.cur && g.cur != "" {
			return h
		}
	}
	return ""
}

// bound returns the boundFunc of the lease holder has: after a read sent
// after each call, until(holder).
func (g *leaseLog) bound(holder string) boundFunc {
	return func(ctx context.Context) (boottime.Instant, bool, error) {
		if _, err := g.fresh(ctx); err != nil {
			return 0, false, err
		}
		at, ok := g.until(holder)
		return at, ok, nil
	}
}

// leader finds the current holder of the Lease, from a read sent after the
// call, and returns the boundFunc of its lease.
func (g *leaseLog) leader(ctx context.Context) (boundFunc, error) {
	holder, err := g.fresh(ctx)
	if err != nil {
		return nil, err
	}
	if holder == "" {
		return nil, fmt.Errorf("bench: the Lease has no holder")
	}
	return g.bound(holder), nil
}
