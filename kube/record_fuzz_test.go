package kube

import (
	"strconv"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tenure-dev/tenure"
)

// leaseWith is a Lease held by holder since acquired (Unix microseconds),
// with annotations.
func leaseWith(holder string, acquired int64, annotations map[string]string) *coordv1.Lease {
	at := metav1.NewMicroTime(time.UnixMicro(acquired))
	return &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "k", Annotations: annotations},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, AcquireTime: &at},
	}
}

// FuzzTokenAnnotation: the token a renewal writes in AnnotationToken is
// read back for the same holder and acquireTime when it is no newer than
// the Lease's resourceVersion, and for any other holder or acquireTime the
// token is the resourceVersion.
func FuzzTokenAnnotation(f *testing.F) {
	f.Add(uint64(42), int64(1_700_000_000_123_456), "web-1#3f2a9c01", uint64(50))
	f.Add(uint64(42), int64(0), "a,b", uint64(42))
	f.Add(uint64(0), int64(-1), "", uint64(1))
	f.Add(uint64(51), int64(1), "h", uint64(50))
	f.Fuzz(func(t *testing.T, token uint64, acquired int64, holder string, rv uint64) {
		if holder == "" {
			return // a Lease without a holder carries no token: tokenOf is asked only about a held one
		}
		acquired = max(min(acquired, 1<<52), -(1 << 52)) // times a MicroTime holds
		at := time.UnixMicro(acquired)
		l := leaseWith(holder, acquired, map[string]string{AnnotationToken: tokenAnnotation(token, at, holder)})
		want := rv
		if token >= 1 && token <= rv {
			want = token
		}
		if got := tokenOf(l, version{n: rv}, holder); got != want {
			t.Fatalf("tokenOf(annotation %q, holder %q, rv %d) = %d, want %d", l.Annotations[AnnotationToken], holder, rv, got, want)
		}
		if got := tokenOf(l, version{n: rv}, holder+"x"); got != rv {
			t.Fatalf("tokenOf(annotation %q) for holder %q = %d, want the resourceVersion %d", l.Annotations[AnnotationToken], holder+"x", got, rv)
		}
		l2 := leaseWith(holder, acquired+1, l.Annotations)
		if got := tokenOf(l2, version{n: rv}, holder); got != rv {
			t.Fatalf("tokenOf(annotation %q) with acquireTime %d µs = %d, want the resourceVersion %d", l.Annotations[AnnotationToken], acquired+1, got, rv)
		}
	})
}

// FuzzTokenOf: whatever the annotation holds, the token read is the
// resourceVersion or a token in [1, resourceVersion] that the annotation
// names in the form tokenAnnotation writes for this holder and acquireTime.
func FuzzTokenOf(f *testing.F) {
	f.Add("42,1700000000123456,web-1", int64(1_700_000_000_123_456), "web-1", uint64(50))
	f.Add("42,1,a,b", int64(1), "a,b", uint64(50))
	f.Add("", int64(0), "", uint64(0))
	f.Add(",,", int64(0), "", uint64(7))
	f.Fuzz(func(t *testing.T, annotation string, acquired int64, holder string, rv uint64) {
		acquired = max(min(acquired, 1<<52), -(1 << 52))
		l := leaseWith(holder, acquired, map[string]string{AnnotationToken: annotation})
		got := tokenOf(l, version{n: rv}, holder)
		if got == rv {
			return
		}
		if got == 0 || got > rv {
			t.Fatalf("tokenOf(annotation %q, rv %d) = %d, outside [1, %d]", annotation, rv, got, rv)
		}
		if want := tokenAnnotation(got, time.UnixMicro(acquired), holder); annotation != want {
			t.Fatalf("tokenOf read token %d from annotation %q for holder %q at %d µs; a renewal writes %q", got, annotation, holder, acquired, want)
		}
	})
}

// FuzzParseVersion: parseVersion accepts only canonical decimal
// resourceVersions, and Kubernetes' order of two accepted ones is the order
// of the tokens they become.
func FuzzParseVersion(f *testing.F) {
	for _, s := range [][2]string{{"1", "2"}, {"10", "9"}, {"0", "1"}, {"007", "7"}, {"", "1"}, {"-1", "1"}, {"+5", "5"},
		{"18446744073709551615", "18446744073709551616"}, {"99999999999999999999", "1"}, {"1a", "2"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		va, erra := parseVersion(a)
		vb, errb := parseVersion(b)
		for _, c := range []struct {
			s   string
			v   version
			err error
		}{{a, va, erra}, {b, vb, errb}} {
			if c.err != nil {
				if !strings.Contains(c.err.Error(), strconv.Quote(c.s)) {
					t.Fatalf("parseVersion(%q) = %v; want it to name the input", c.s, c.err)
				}
				continue
			}
			if c.v.s != c.s || strconv.FormatUint(c.v.n, 10) != c.s || c.v.n == 0 {
				t.Fatalf("parseVersion(%q) = %+v; want a positive canonical integer", c.s, c.v)
			}
		}
		if erra != nil || errb != nil {
			return
		}
		if va.after(vb) != (va.n > vb.n) || vb.after(va) != (vb.n > va.n) {
			t.Fatalf("%q after %q = %v, %q after %q = %v; tokens %d, %d", a, b, va.after(vb), b, a, vb.after(va), va.n, vb.n)
		}
	})
}

// FuzzLeaseName: every valid key maps to a valid Lease name that names it
// back (through AnnotationKey when the name is not the key), and two keys
// that map to one name never both read as holding it.
func FuzzLeaseName(f *testing.F) {
	for _, s := range [][2]string{{"my-controller", "orders/17"}, {"Scheduler", "scheduler"}, {"a.b", "a/b"}, {"a--b", "a/-b"},
		{strings.Repeat("x", 200), strings.Repeat("x", 199) + "y"}, {"9", "_"}, {"-a", "a-"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if tenure.ValidateKey(a) != nil {
			return
		}
		name := LeaseName(a)
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Fatalf("LeaseName(%q) = %q, not a Lease name: %v", a, name, errs)
		}
		if LeaseName(a) != name {
			t.Fatalf("LeaseName(%q) is not deterministic", a)
		}
		if exactName(a) != (name == a) {
			t.Fatalf("LeaseName(%q) = %q, exact name %v", a, name, exactName(a))
		}
		written := leaseFor(a)
		if got, ok := keyOf(written); !ok || got != a || checkKey(written, a) != nil {
			t.Fatalf("Lease %q written for %q reads as key %q (%v), check %v", written.Name, a, got, ok, checkKey(written, a))
		}
		// b, and a's Lease name used as a key.
		for _, other := range []string{b, name} {
			if other == a || tenure.ValidateKey(other) != nil || LeaseName(other) != name {
				continue
			}
			if checkKey(written, other) == nil || checkKey(leaseFor(other), a) == nil {
				t.Fatalf("keys %q and %q share Lease %q and each reads as the other's", a, other, name)
			}
		}
	})
}

// leaseFor is the Lease tenure writes for key (see Coordinator.create).
func leaseFor(key string) *coordv1.Lease {
	l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName(key)}}
	if l.Name != key {
		l.Annotations = map[string]string{AnnotationKey: key}
	}
	return l
}

// FuzzEpochOf: the epoch read back from a membership Lease's name is the
// epoch the name was made with, and the name is a valid Lease name.
func FuzzEpochOf(f *testing.F) {
	f.Add("jobs", uint64(42))
	f.Add("orders/eu", uint64(1))
	f.Add("x", uint64(1<<64-1))
	f.Fuzz(func(t *testing.T, group string, epoch uint64) {
		name := memberName(group, epoch)
		if got := epochOf(name); got != epoch {
			t.Fatalf("epochOf(memberName(%q, %d)) = %d", group, epoch, got)
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Fatalf("memberName(%q, %d) = %q, not a Lease name: %v", group, epoch, name, errs)
		}
	})
}
