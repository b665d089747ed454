package kube_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/kubetest"
	"github.com/tenure-dev/tenure/kube"
)

// TestTokenAcrossDeleteAndRecreate: a Lease deleted by hand and created
// again by the next Acquire gives a token greater than every one before,
// because etcd's revisions only grow. A renewal keeps the token.
func TestTokenAcrossDeleteAndRecreate(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	for _, key := range []string{"deleted", "Deleted/Again"} {
		var last uint64
		for round := range 3 {
			g, err := c.Acquire(ctx(t), key, "alice#1", 5*time.Second)
			if err != nil {
				t.Fatalf("round %d: Acquire(%q) error = %v", round, key, err)
			}
			if g.Token <= last {
				t.Fatalf("round %d: Acquire(%q) token = %d; want > %d, the token before the Lease was deleted", round, key, g.Token, last)
			}
			last = g.Token
			r, err := c.Renew(ctx(t), g)
			if err != nil || r.Token != g.Token {
				t.Fatalf("round %d: Renew(%v) = %v, %v; want the same token", round, g, r, err)
			}
			if err := cs.CoordinationV1().Leases(ns).Delete(ctx(t), kube.LeaseName(key), metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete the Lease: %v", err)
			}
			if _, err := c.Renew(ctx(t), r); !errors.Is(err, tenure.ErrLost) {
				t.Fatalf("round %d: Renew after the Lease was deleted: error = %v; want tenure.ErrLost", round, err)
			}
		}
	}
}

// TestIncomparableServer: a server whose resourceVersions are not ordered
// integers is refused with kube.ErrIncomparable, naming the version. The
// server here is real; the versions are rewritten on their way back to
// the client, as a fault below it.
func TestIncomparableServer(t *testing.T) {
	t.Parallel()
	s, cs := shared(t)
	ns := newNamespace(t, cs)
	cfg := s.Config(kubetest.Admin)
	cfg.ContentType = "application/json"
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return rewriteVersions{rt} })
	bad, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := newCoordinator(t, bad, ns)
	_, err = c.Acquire(ctx(t), "k", "alice#1", 5*time.Second)
	if !errors.Is(err, kube.ErrIncomparable) || !strings.Contains(err.Error(), `"v`) {
		t.Fatalf("Acquire on a server with resourceVersions like \"v123\": error = %v; want one wrapping kube.ErrIncomparable naming the version", err)
	}
	if _, _, err := c.Leader(ctx(t), "k"); !errors.Is(err, kube.ErrIncomparable) {
		t.Fatalf("Leader on it: error = %v; want kube.ErrIncomparable", err)
	}
}

// rewriteVersions turns every resourceVersion in a JSON reply into "v…".
type rewriteVersions struct{ rt http.RoundTripper }

var versionField = regexp.MustCompile(`"resourceVersion":"(\d+)"`)

func (r rewriteVersions) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	if err != nil || !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	b = versionField.ReplaceAll(b, []byte(`"resourceVersion":"v$1"`))
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// TestNameClash: a Lease at the name a key maps to that carries another
// key is refused, never overwritten.
func TestNameClash(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	key := "Orders/1"
	holder, secs := "someone", int32(30)
	other := &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: kube.LeaseName(key), Annotations: map[string]string{kube.AnnotationKey: "other/key"}},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs},
	}
	if _, err := cs.CoordinationV1().Leases(ns).Create(ctx(t), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx(t), key, "alice#1", 5*time.Second); !errors.Is(err, kube.ErrNameClash) {
		t.Fatalf("Acquire(%q) with its Lease name taken by another key: error = %v; want kube.ErrNameClash", key, err)
	}
	l, err := cs.CoordinationV1().Leases(ns).Get(ctx(t), kube.LeaseName(key), metav1.GetOptions{})
	if err != nil || *l.Spec.HolderIdentity != holder {
		t.Fatalf("the other key's Lease after the refused Acquire: %v, %v; want it untouched", l, err)
	}
}

// TestLeaseFields: tenure writes the fields client-go writes, so that
// `kubectl get lease` shows its holder: holderIdentity,
// leaseDurationSeconds (the TTL rounded up), acquireTime, renewTime, and
// leaseTransitions, one more at every grant; a release clears the holder
// as client-go's ReleaseOnCancel does.
func TestLeaseFields(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	read := func() *coordv1.Lease {
		t.Helper()
		l, err := cs.CoordinationV1().Leases(ns).Get(ctx(t), "fields", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	before := time.Now().Add(-time.Second)
	g, err := c.Acquire(ctx(t), "fields", "alice#1", 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	l := read()
	sp := l.Spec
	if sp.HolderIdentity == nil || *sp.HolderIdentity != "alice#1" || sp.LeaseDurationSeconds == nil || *sp.LeaseDurationSeconds != 2 ||
		sp.AcquireTime == nil || sp.AcquireTime.Time.Before(before) || sp.RenewTime == nil || !sp.RenewTime.Time.Equal(sp.AcquireTime.Time) ||
		sp.LeaseTransitions == nil || *sp.LeaseTransitions != 0 || l.Labels[kube.LabelManagedBy] != "tenure" {
		t.Fatalf("Lease after the first grant: %+v, labels %v; want holder alice#1, 2s, acquire = renew = now, 0 transitions, managed by tenure", sp, l.Labels)
	}
	if g.TTL != 2*time.Second {
		t.Fatalf("grant TTL = %s; want 2s, the leaseDurationSeconds written", g.TTL)
	}
	if _, err := c.Renew(ctx(t), g); err != nil {
		t.Fatal(err)
	}
	renewed := read().Spec
	if !renewed.RenewTime.After(sp.RenewTime.Time) || !renewed.AcquireTime.Time.Equal(sp.AcquireTime.Time) {
		t.Fatalf("after a renewal: acquireTime %v renewTime %v; want acquireTime %v kept and a later renewTime", renewed.AcquireTime, renewed.RenewTime, sp.AcquireTime)
	}
	if err := c.Release(ctx(t), g); err != nil {
		t.Fatal(err)
	}
	if r := read().Spec; *r.HolderIdentity != "" || *r.LeaseDurationSeconds != 1 || *r.LeaseTransitions != *renewed.LeaseTransitions {
		t.Fatalf("after a release: %+v; want holder \"\", duration 1s and the transitions kept (%d), as client-go releases", r, *renewed.LeaseTransitions)
	}
	if _, err := c.Acquire(ctx(t), "fields", "bob#2", 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if r := read().Spec; *r.HolderIdentity != "bob#2" || *r.LeaseTransitions != *renewed.LeaseTransitions+1 || *r.LeaseDurationSeconds != 3 {
		t.Fatalf("after the next grant: %+v; want holder bob#2, one more transition, 3s", r)
	}
}
