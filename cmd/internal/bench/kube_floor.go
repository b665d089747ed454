package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// kubeFloor: an update of a Lease by one client, from its send until
// another client's watch of that Lease delivers it; then one update by the
// watcher, preconditioned on the version the event carried (the shape of
// tenure's acquisition after a release).
type kubeFloor struct {
	writer, watcher kubernetes.Interface
	ns, name        string
	lease           *coordv1.Lease // as last written
	events          watch.Interface
}

func newKubeFloor(ctx context.Context, t Target, name string) (*kubeFloor, error) {
	f := &kubeFloor{name: name}
	var err error
	if f.writer, f.ns, err = t.kubeClient(); err != nil {
		return nil, err
	}
	if f.watcher, _, err = t.kubeClient(); err != nil {
		return nil, err
	}
	leases := f.writer.CoordinationV1().Leases(f.ns)
	f.lease, err = leases.Create(ctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("bench: floor Lease: %w", err)
	}
	f.events, err = f.watcher.CoordinationV1().Leases(f.ns).Watch(context.WithoutCancel(ctx), metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion: f.lease.ResourceVersion,
	})
	if err != nil {
		return nil, fmt.Errorf("bench: floor watch: %w", err)
	}
	return f, nil
}

func (f *kubeFloor) measure(ctx context.Context) (time.Duration, error) {
	leases := f.writer.CoordinationV1().Leases(f.ns)
	l := f.lease.DeepCopy()
	now := metav1.NewMicroTime(time.Now())
	l.Spec.RenewTime = &now
	start := time.Now()
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		return 0, fmt.Errorf("bench: floor update: %w", err)
	}
	ev, err := wait(ctx, f.events.ResultChan(), 10*time.Second, "floor watch event")
	if err != nil {
		return 0, err
	}
	seen, ok := ev.Object.(*coordv1.Lease)
	if !ok {
		return 0, fmt.Errorf("bench: floor watch: %v", apierrors.FromObject(ev.Object))
	}
	seen = seen.DeepCopy()
	holder := fmt.Sprintf("floor-%d", rand.Uint32())
	seen.Spec.HolderIdentity = &holder
	if f.lease, err = f.watcher.CoordinationV1().Leases(f.ns).Update(ctx, seen, metav1.UpdateOptions{}); err != nil {
		return 0, fmt.Errorf("bench: floor update by the watcher: %w", err)
	}
	took := time.Since(start)
	if _, err := wait(ctx, f.events.ResultChan(), 10*time.Second, "floor watch event"); err != nil { // the watcher's own write
		return 0, err
	}
	return took, nil
}

func (f *kubeFloor) close() {
	if f.events != nil {
		f.events.Stop()
	}
	if f.writer != nil {
		_ = f.writer.CoordinationV1().Leases(f.ns).Delete(context.Background(), f.name, metav1.DeleteOptions{})
	}
}

// randPhase is a random duration in [0, d), or 0.
func randPhase(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}
