package kube_test

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/tenure-dev/tenure"
)

// TestRenewSameSecond: client-go compares the record with whole-second
// times, so every write must change it as client-go marshals it, also
// several renewals within one second (they increment leaseTransitions),
// and no record may come back. Every renewal's Sent is its own send, and
// the duration stays the TTL.
func TestRenewSameSecond(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	var records []string
	var transitions []int32
	for range 5 {
		records, transitions = records[:0], transitions[:0]
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 20*time.Millisecond)))
		g, err := c.Acquire(ctx(t), "k", "alice#1", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		rec, d := clientGoRecord(t, cs, ns)
		records, transitions = append(records, rec), append(transitions, d)
		for range 2 {
			before := tenure.Now()
			if g, err = c.Renew(ctx(t), g); err != nil {
				t.Fatal(err)
			}
			if g.Sent.Time().Before(before.Time()) || g.TTL != 10*time.Second {
				t.Fatalf("Renew = %v, Sent %s before the call; want its own send and TTL 10s", g, before.Time().Sub(g.Sent.Time()))
			}
			rec, d := clientGoRecord(t, cs, ns)
			records, transitions = append(records, rec), append(transitions, d)
		}
		if time.Now().Unix() == g.Sent.Time().Unix() {
			break // all three writes in one second
		}
	}
	for i := range records {
		for j := range i {
			if records[i] == records[j] {
				t.Fatalf("writes %d and %d in one second left the record client-go compares the same: %s", j, i, records[i])
			}
		}
	}
	if transitions[0] != 0 || transitions[1] != 1 || transitions[2] != 2 {
		t.Fatalf("leaseTransitions after an acquire and two renewals in one second = %v; want [0 1 2]", transitions)
	}
}

// clientGoRecord returns Lease k's record as client-go's LeaseLock reads
// and compares it, and its leaseTransitions; it checks that the duration
// is the TTL, 10s.
func clientGoRecord(t *testing.T, cs kubernetes.Interface, ns string) (string, int32) {
	t.Helper()
	l, err := cs.CoordinationV1().Leases(ns).Get(ctx(t), "k", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(*resourcelock.LeaseSpecToLeaderElectionRecord(&l.Spec))
	if err != nil {
		t.Fatal(err)
	}
	if d := *l.Spec.LeaseDurationSeconds; d != 10 {
		t.Fatalf("leaseDurationSeconds = %d; want 10, the TTL", d)
	}
	return string(b), *l.Spec.LeaseTransitions
}
