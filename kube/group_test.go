package kube_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
	"github.com/tenure-dev/tenure/partition/partitiontest"
)

// TestGroupConformance runs the partition group suite on a real API
// server, each member with a coordinator of its own, as separate processes
// would have. A partition is freed by hand as an operator would with
// kubectl: an update that clears its Lease's holder. The memberships last
// 10s: the suite claims 200 partitions without renewing, a write each on
// Kubernetes, which took over 4s on a loaded machine (load average 20 on 2
// cores).
func TestGroupConformance(t *testing.T) {
	t.Parallel()
	_, cs := server(t)
	ns := newNamespace(t, cs)
	partitiontest.Run(t, func(t *testing.T) tenure.Coordinator {
		cfg := kube.DefaultConfig()
		cfg.Namespace = ns
		c, err := kube.New(cs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}, partitiontest.WithTTL(10*time.Second), partitiontest.WithFreeByHand(func(t *testing.T, group, name string) {
		leases := cs.CoordinationV1().Leases(ns)
		l, err := leases.Get(ctx(t), kube.LeaseName(partition.Key(group, name)), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		none := ""
		l.Spec.HolderIdentity = &none
		if _, err := leases.Update(ctx(t), l, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("free partition %s/%s by hand: %v", group, name, err)
		}
	}))
}
