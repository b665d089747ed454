package kube

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// A version is a Lease's resourceVersion, checked to be a comparable
// integer (KEP-5504: ordered per resource since Kubernetes 1.35; on etcd,
// the revision of the write, which only grows, across deletes and
// re-creates too).
type version struct {
	s string
	n uint64
}

// parseVersion checks that rv is a comparable resourceVersion that fits a
// fencing token, and returns it.
func parseVersion(rv string) (version, error) {
	if _, err := resourceversion.CompareResourceVersion(rv, rv); err != nil {
		return version{}, fmt.Errorf("%w: resourceVersion %q: %v: tenure needs an API server whose resourceVersions are ordered integers (Kubernetes 1.35 or newer, on etcd)", ErrIncomparable, rv, err)
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return version{}, fmt.Errorf("%w: resourceVersion %q does not fit a 64-bit fencing token", ErrIncomparable, rv)
	}
	return version{s: rv, n: n}, nil
}

// after reports whether v is a later resourceVersion than w.
func (v version) after(w version) bool {
	c, err := resourceversion.CompareResourceVersion(v.s, w.s)
	return err == nil && c > 0
}
