package kube_test

import (
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/kubetest"
	"github.com/tenure-dev/tenure/kube"
	"github.com/tenure-dev/tenure/tenuretest"
)

// TestConformance runs the suite against a real kube-apiserver on the
// embedded etcd; its Restart check crashes and restarts the API server.
func TestConformance(t *testing.T) { conformance(t) }

// TestConformanceEtcdBinary runs it on Debian's etcd binary.
func TestConformanceEtcdBinary(t *testing.T) { conformance(t, kubetest.WithEtcdBinary()) }

func conformance(t *testing.T, opts ...kubetest.Option) {
	t.Parallel() // it mostly waits for leases to expire
	s, cs := server(t, opts...)
	ns := newNamespace(t, cs)
	tenuretest.RunCoordinatorTests(t, func(t *testing.T) tenure.Coordinator {
		return newCoordinator(t, cs, ns)
	},
		tenuretest.WithTTL(2*time.Second),
		tenuretest.WithEdits(edits(cs, ns)),
		tenuretest.WithRestart(func(t *testing.T) {
			s.Kill()
			s.Restart(t)
		}),
	)
}

// edits edit a grant's Lease in namespace ns as `kubectl edit lease` or
// `kubectl delete lease` would: Lengthen and Shorten set its
// leaseDurationSeconds to d (whole seconds, at least one), Lengthen its
// renewTime to now too; Remove deletes it.
func edits(cs kubernetes.Interface, ns string) tenuretest.Edits {
	duration := func(tb testing.TB, g tenure.Grant, d time.Duration, renewed bool) {
		tb.Helper()
		editLease(tb, cs, ns, kube.LeaseName(g.Key), func(l *coordv1.Lease) {
			secs := int32(max((d+time.Second-1)/time.Second, 1))
			l.Spec.LeaseDurationSeconds = &secs
			if renewed {
				now := metav1.NowMicro()
				l.Spec.RenewTime = &now
			}
		})
	}
	return tenuretest.Edits{
		Lengthen: func(tb testing.TB, g tenure.Grant, d time.Duration) { tb.Helper(); duration(tb, g, d, true) },
		Shorten:  func(tb testing.TB, g tenure.Grant, d time.Duration) { tb.Helper(); duration(tb, g, d, false) },
		Remove: func(tb testing.TB, g tenure.Grant) {
			tb.Helper()
			if err := cs.CoordinationV1().Leases(ns).Delete(ctx(tb), kube.LeaseName(g.Key), metav1.DeleteOptions{}); err != nil {
				tb.Fatalf("delete Lease of %v: %v", g, err)
			}
		},
	}
}
