package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/tenure-dev/tenure/internal/display"

	coordv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tenure-dev/tenure"
)

// Annotations and labels tenure writes on Leases. Users name them in
// kubectl selectors, RBAC rules and their own tools that read tenure's
// Leases.
const (
	// AnnotationKey carries the tenure key of a Lease whose name is not the
	// key itself (see LeaseName).
	AnnotationKey = "tenure.dev/key"
	// AnnotationToken carries the fencing token of the grant a Lease
	// holds, bound to its holder and acquireTime: "token,acquireTime in
	// Unix microseconds,holder". Renewals write it; an acquiring write
	// removes it, because that write's own resourceVersion is the token.
	AnnotationToken = "tenure.dev/token"
	// AnnotationReleased marks a Lease tenure released: "token,renewTime in
	// Unix microseconds,holder" of the grant released, bound to the
	// releasing write's renewTime. A Lease cleared without it (by
	// client-go's release, which may clear a grant it no longer holds) is
	// free only after the wait that follows any write.
	AnnotationReleased = "tenure.dev/released"
	// AnnotationTTL carries the TTL, in whole seconds, of the last grant
	// tenure wrote to a Lease (its granting write and every renewal write
	// it). client-go keeps the annotations it finds, so a Lease its release
	// cleared still says how long the grant it may have cleared lasted: a
	// contender waits the longest of that, the duration it saw and its own
	// TTL.
	AnnotationTTL = "tenure.dev/ttl"
	// LabelManagedBy is set to "tenure" on Leases tenure creates, so that
	// `kubectl get lease -l app.kubernetes.io/managed-by=tenure` lists them.
	LabelManagedBy = "app.kubernetes.io/managed-by"
)

// hashLen is how many hex digits of SHA-256 a hashed Lease name carries.
const hashLen = 16

// LeaseName returns the name of the Lease that holds key. A key that is a
// valid Lease name (a DNS-1123 subdomain: lower-case letters, digits, '-'
// and '.', as in "my-controller") is its own name, so that tenure and
// client-go's leaderelection can share a Lease. Any other key ("orders/17",
// "Scheduler") maps to its lower-cased letters and digits followed by 16
// hex digits of its SHA-256 ("orders-17-5d0c…"), and the Lease carries the
// key in the AnnotationKey annotation: a Lease whose annotation names
// another key is refused with ErrNameClash. A key spelled as such a name
// ("orders-17-" and 16 hex digits) is refused with tenure.ErrInvalidKey, so
// that no two keys share a Lease. It names a key's Lease for kubectl.
func LeaseName(key string) string {
	if exactName(key) {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	var b strings.Builder
	for i := 0; i < len(key) && b.Len() < 100; i++ {
		switch c := key[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			b.WriteByte(c)
		case 'A' <= c && c <= 'Z':
			b.WriteByte(c - 'A' + 'a')
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
		b.WriteByte('-')
	}
	return b.String() + hex.EncodeToString(sum[:])[:hashLen]
}

// exactName reports whether key is a valid Lease name, and so its own.
func exactName(key string) bool {
	return len(validation.IsDNS1123Subdomain(key)) == 0
}

// validateKey is tenure.ValidateKey with one rule more on Kubernetes: a key
// spelled as a hashed Lease name ("jobs-1-" and 16 hex digits, or 16 hex
// digits alone) is refused. It would be its own Lease's name, and so share
// the Lease of the key that name was made from (partition "jobs/1", say):
// refused while either held it, and the other refused for as long as that
// Lease exists. With it refused, no two keys have one Lease name.
func validateKey(key string) error {
	if err := tenure.ValidateKey(key); err != nil {
		return err
	}
	if exactName(key) && hashedName(key) {
		return fmt.Errorf("%w %s: spelled as a Lease name tenure makes for another key (letters, digits and '-', then 16 hex digits), whose Lease it would share on Kubernetes; name it otherwise", tenure.ErrInvalidKey, display.Input(key))
	}
	return nil
}

// hashedName reports whether a valid Lease name has the shape of the names
// LeaseName makes from keys that are not Lease names: no '.', and 16 hex
// digits alone or after a '-'.
func hashedName(name string) bool {
	n := len(name) - hashLen
	if n < 0 || strings.Contains(name, ".") || (n > 0 && name[n-1] != '-') {
		return false
	}
	for _, c := range name[n:] {
		if ('0' > c || c > '9') && ('a' > c || c > 'f') {
			return false
		}
	}
	return true
}

// keyOf returns the tenure key a Lease holds: its AnnotationKey, or its
// name. ok is false when that is not a valid tenure key.
func keyOf(l *coordv1.Lease) (key string, ok bool) {
	key = l.Name
	if a, has := l.Annotations[AnnotationKey]; has {
		key = a
	}
	return key, validateKey(key) == nil && LeaseName(key) == l.Name
}

// checkKey reports whether Lease l holds key, and if not why not.
func checkKey(l *coordv1.Lease, key string) error {
	if got, _ := keyOf(l); got != key {
		return fmt.Errorf("%w: Lease %s/%s holds key %s (annotation %s), not %s", ErrNameClash, l.Namespace, l.Name, display.Input(got), AnnotationKey, display.Input(key))
	}
	return nil
}
