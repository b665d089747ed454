package kube_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/kubetest"
	"github.com/tenure-dev/tenure/kube"
)

// Leases allow create-on-update: the API server creates a Lease that a PUT
// names when it does not exist, whatever resourceVersion the PUT carries
// (TestUpdateRecreatesDeletedLease shows it). Only the uid a PUT carries is
// checked against an absent Lease. Every write tenure makes over a Lease it
// read (a renewal, a membership's renewal, a check's confirming update, a
// release) must therefore carry the uid it read, or a write in flight when
// the Lease is deleted (by an operator, or by a claimer ending an expired
// membership) would make it again: a membership deleted by the claimer
// that took its partitions would live on ("after the delete the owner can
// never renew", package kube's documentation).

// TestUpdateRecreatesDeletedLease: a PUT of a deleted Lease with its
// resourceVersion but no uid makes it again; with its uid, it is refused
// with a conflict. The hazard TestWritesToDeletedLease guards against is
// the API server's behaviour, not a hypothesis.
func TestUpdateRecreatesDeletedLease(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	leases := cs.CoordinationV1().Leases(ns)
	holder, secs := "someone", int32(30)
	l, err := leases.Create(ctx(t), &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "recreated"},
		Spec: coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := leases.Delete(ctx(t), l.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Update(ctx(t), l, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("PUT of deleted Lease %s with uid and resourceVersion = %v; want a conflict", l.Name, err)
	}
	l.UID = types.UID("")
	out, err := leases.Update(ctx(t), l, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("PUT of deleted Lease %s with resourceVersion %s, no uid = %v; want it made again (create-on-update)", l.Name, l.ResourceVersion, err)
	}
	t.Logf("PUT of deleted Lease %s at resourceVersion %s without uid made it again at resourceVersion %s", l.Name, l.ResourceVersion, out.ResourceVersion)
}

// TestWritesToDeletedLease: each write tenure makes over a Lease it read,
// sent just after the Lease was deleted (a transport below the client
// deletes it as the PUT leaves), must not make it again, and the call must
// report what a deletion means: the grant or membership lost, a release
// done. Planted: with the uid cleared from the update of extend (Renew)
// and of RenewMember, the Renew and RenewMember cases fail: each renewal
// makes the deleted Lease again and reports success.
func TestWritesToDeletedLease(t *testing.T) {
	t.Parallel()
	s, cs := shared(t)
	ns := newNamespace(t, cs)
	leases := cs.CoordinationV1().Leases(ns)
	ft := &faultOn{}
	cfg := s.Config(kubetest.Admin)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { ft.rt = rt; return ft })
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := newCoordinator(t, client, ns)
	// deleteOnPut arms ft to delete Lease name as the next PUT of it leaves.
	deleteOnPut := func(t *testing.T, name string) {
		ft.mu.Lock()
		ft.match = func(r *http.Request) bool {
			return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/namespaces/"+ns+"/leases/"+name)
		}
		ft.mu.Unlock()
		ft.arm(func() func() {
			if err := leases.Delete(ctx(t), name, metav1.DeleteOptions{}); err != nil {
				t.Errorf("delete Lease %s: %v", name, err)
			}
			return func() {}
		})
	}
	// gone checks that Lease name was deleted once and not made again.
	gone := func(t *testing.T, name string, fired int) {
		t.Helper()
		if n := ft.fired(); n != fired {
			t.Fatalf("Lease %s deleted %d times; want %d, as its PUT left", name, n, fired)
		}
		if l, err := leases.Get(ctx(t), name, metav1.GetOptions{}); err == nil {
			t.Fatalf("Lease %s after a write sent as it was deleted: made again (holder %v, resourceVersion %s); want it gone", name, holderOf(l), l.ResourceVersion)
		} else if !apierrors.IsNotFound(err) {
			t.Fatalf("read Lease %s: %v", name, err)
		}
	}
	const ttl = 30 * time.Second
	fired := 0
	t.Run("Renew", func(t *testing.T) {
		g, err := c.Acquire(ctx(t), "renew-deleted", "h#1", ttl)
		if err != nil {
			t.Fatal(err)
		}
		deleteOnPut(t, kube.LeaseName(g.Key))
		r, err := c.Renew(ctx(t), g)
		fired++
		if !errors.Is(err, tenure.ErrLost) {
			t.Errorf("Renew(%v) sent as its Lease was deleted = %v, %v; want tenure.ErrLost", g, r, err)
		}
		gone(t, kube.LeaseName(g.Key), fired)
	})
	t.Run("Release", func(t *testing.T) {
		g, err := c.Acquire(ctx(t), "release-deleted", "h#1", ttl)
		if err != nil {
			t.Fatal(err)
		}
		deleteOnPut(t, kube.LeaseName(g.Key))
		if err := c.Release(ctx(t), g); err != nil {
			t.Errorf("Release(%v) sent as its Lease was deleted = %v; want nil (gone already)", g, err)
		}
		fired++
		gone(t, kube.LeaseName(g.Key), fired)
	})
	t.Run("RenewMember", func(t *testing.T) {
		m, err := c.JoinGroup(ctx(t), "renew-deleted", "m#1", ttl, 1)
		if err != nil {
			t.Fatal(err)
		}
		deleteOnPut(t, memberLeaseName(m))
		r, err := c.RenewMember(ctx(t), m)
		fired++
		if !errors.Is(err, tenure.ErrLost) {
			t.Errorf("RenewMember(%s) sent as its Lease was deleted = %v, %v; want tenure.ErrLost", m, r, err)
		}
		gone(t, memberLeaseName(m), fired)
	})
	t.Run("CheckPartitions/membership", func(t *testing.T) {
		m, err := c.JoinGroup(ctx(t), "check-member-deleted", "m#1", ttl, 1)
		if err != nil {
			t.Fatal(err)
		}
		g := claimOne(t, c, m, "0")
		deleteOnPut(t, memberLeaseName(m))
		lost, err := c.CheckPartitions(ctx(t), m, []tenure.Grant{g})
		fired++
		if !errors.Is(err, tenure.ErrLost) {
			t.Errorf("CheckPartitions(%s) confirming its membership as its Lease was deleted = %v, %v; want tenure.ErrLost", m, lost, err)
		}
		gone(t, memberLeaseName(m), fired)
	})
	t.Run("CheckPartitions/partition", func(t *testing.T) {
		m, err := c.JoinGroup(ctx(t), "check-part-deleted", "m#1", ttl, 1)
		if err != nil {
			t.Fatal(err)
		}
		g := claimOne(t, c, m, "0")
		deleteOnPut(t, kube.LeaseName(g.Key))
		lost, err := c.CheckPartitions(ctx(t), m, []tenure.Grant{g})
		fired++
		if err != nil || len(lost) != 1 || lost[0].Token != g.Token {
			t.Errorf("CheckPartitions(%s, %v) confirming the partition as its Lease was deleted = lost %v, %v; want it lost", m, g, lost, err)
		}
		gone(t, kube.LeaseName(g.Key), fired)
	})
	t.Run("ReleasePartitions", func(t *testing.T) {
		m, err := c.JoinGroup(ctx(t), "release-part-deleted", "m#1", ttl, 1)
		if err != nil {
			t.Fatal(err)
		}
		g := claimOne(t, c, m, "0")
		deleteOnPut(t, kube.LeaseName(g.Key))
		if err := c.ReleasePartitions(ctx(t), m, []tenure.Grant{g}); err != nil {
			t.Errorf("ReleasePartitions(%s, %v) sent as its Lease was deleted = %v; want nil (gone already)", m, g, err)
		}
		fired++
		gone(t, kube.LeaseName(g.Key), fired)
	})
}

// holderOf is l's holder, for messages.
func holderOf(l *coordv1.Lease) any {
	if l.Spec.HolderIdentity == nil {
		return nil
	}
	return *l.Spec.HolderIdentity
}
