package kube

import (
	"context"
	"errors"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/tenure-dev/tenure"
)

// refusal returns err, wrapped with tenure.ErrRefused when the API server
// refused it for good: RBAC forbids the verb (403 Forbidden) or the
// credentials are not accepted (401 Unauthorized). Timeouts, 5xx answers,
// conflicts and throttling (429) are not refusals.
func refusal(err error) error {
	if err == nil || errors.Is(err, tenure.ErrRefused) || !(apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)) {
		return err
	}
	return fmt.Errorf("%w: %w", tenure.ErrRefused, err)
}

// markedLeases are the Coordinator's Leases: every call's error that the
// API server refused for good also wraps tenure.ErrRefused (see refusal),
// so that an Elector or a partition group stops instead of retrying it.
type markedLeases struct{ coordclient.LeaseInterface }

func (l markedLeases) Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	out, err := l.LeaseInterface.Create(ctx, lease, opts)
	return out, refusal(err)
}

func (l markedLeases) Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	out, err := l.LeaseInterface.Update(ctx, lease, opts)
	return out, refusal(err)
}

func (l markedLeases) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return refusal(l.LeaseInterface.Delete(ctx, name, opts))
}

func (l markedLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	out, err := l.LeaseInterface.Get(ctx, name, opts)
	return out, refusal(err)
}

func (l markedLeases) List(ctx context.Context, opts metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	out, err := l.LeaseInterface.List(ctx, opts)
	return out, refusal(err)
}

func (l markedLeases) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := l.LeaseInterface.Watch(ctx, opts)
	return w, refusal(err)
}
