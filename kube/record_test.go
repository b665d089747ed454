package kube_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// lease returns a Lease at resourceVersion rv held by holder for secs.
func lease(rv, holder string, secs int32) *coordv1.Lease {
	acquired := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC))
	return &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "k", ResourceVersion: rv},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &acquired, RenewTime: &acquired},
	}
}

// TestExpiryRule: a contender may take a held Lease only once it has seen
// the same resourceVersion for the whole duration plus the drift
// allowance, counted from its first sighting, whatever renewTime says.
func TestExpiryRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxDrift = 0.01
		seen := tenure.Now()
		r, err := kube.NewRecord(lease("42", "alice#1", 10), seen, maxDrift)
		if err != nil {
			t.Fatal(err)
		}
		if r.Takeable("bob#2") {
			t.Fatal("Takeable by another holder at its first sighting = true; want false")
		}
		if !r.Takeable("alice#1") {
			t.Fatal("Takeable by its own holder = false; want true (a new grant supersedes)")
		}
		time.Sleep(10 * time.Second) // the duration alone
		if r.Takeable("bob#2") {
			t.Fatalf("Takeable after exactly leaseDurationSeconds = true; want false until the drift allowance (%s left)", r.Left())
		}
		if got, want := r.Left(), 100*time.Millisecond; got != want {
			t.Fatalf("Left() after the duration = %s; want %s (1%% of 10s)", got, want)
		}
		time.Sleep(100 * time.Millisecond)
		if !r.Takeable("bob#2") {
			t.Fatalf("Takeable after duration·(1+MaxDrift) = false (Left %s); want true", r.Left())
		}
	})
}

// TestExpiryRuleReleasedOrNoDuration: a Lease tenure released is free at
// once; so, as client-go reads it, is a held one without a duration.
func TestExpiryRuleReleasedOrNoDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		released := lease("7", "", 1)
		released.Annotations = map[string]string{kube.AnnotationReleased: kube.TokenAnnotation(6, released.Spec.RenewTime.Time, "alice#1")}
		for _, l := range []*coordv1.Lease{released, lease("8", "alice#1", 0)} {
			r, err := kube.NewRecord(l, tenure.Now(), 0.01)
			if err != nil {
				t.Fatal(err)
			}
			if !r.TakeableFor("bob#2", 15*time.Second) {
				t.Errorf("Lease holder %q duration %d: Takeable = false; want true", *l.Spec.HolderIdentity, *l.Spec.LeaseDurationSeconds)
			}
		}
	})
}

// TestExpiryRuleForeignClear: a Lease cleared without tenure's release
// mark bound to that very write (client-go's release, which may clear a
// grant it no longer holds, keeps the annotations it read and writes its
// own times) is a change like any other: a contender asking for ttl waits
// ttl·(1 + MaxDrift) from its first sighting.
func TestExpiryRuleForeignClear(t *testing.T) {
	cleared := lease("9", "", 1)
	copied := cleared.DeepCopy() // a mark bound to an earlier write's time
	copied.Annotations = map[string]string{kube.AnnotationReleased: kube.TokenAnnotation(6, cleared.Spec.RenewTime.Add(-time.Second), "alice#1")}
	late := cleared.DeepCopy() // a mark for a token later than the write
	late.Annotations = map[string]string{kube.AnnotationReleased: kube.TokenAnnotation(10, cleared.Spec.RenewTime.Time, "alice#1")}
	for name, l := range map[string]*coordv1.Lease{"no mark": cleared, "a copied mark": copied, "a mark for a later token": late} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r, err := kube.NewRecord(l, tenure.Now(), 0.01)
				if err != nil {
					t.Fatal(err)
				}
				if r.TakeableFor("bob#2", 10*time.Second) {
					t.Fatal("Takeable at first sighting = true; want false")
				}
				time.Sleep(10 * time.Second)
				if r.TakeableFor("bob#2", 10*time.Second) {
					t.Fatal("Takeable after the duration alone = true; want false until the drift allowance")
				}
				time.Sleep(100 * time.Millisecond)
				if !r.TakeableFor("bob#2", 10*time.Second) {
					t.Fatal("Takeable after ttl·(1+MaxDrift) = false; want true")
				}
			})
		})
	}
}

// TestExpiryRuleForeignClearOfALongerGrant: a Lease cleared without
// tenure's release mark, whose tenure.dev/ttl says the last grant tenure
// wrote lasted 30s, waits 30s·(1 + MaxDrift) for a contender asking for
// 3s, which never saw that grant: the clear may have cleared it, and its
// holder learns of it only at its next renewal. A tenure.dev/ttl tenure
// could not have written (not whole seconds from 1 up to a day) counts
// for nothing.
func TestExpiryRuleForeignClearOfALongerGrant(t *testing.T) {
	for _, tc := range []struct {
		ttl  string
		wait time.Duration
	}{{"30", 30300 * time.Millisecond}, {"0", 3030 * time.Millisecond}, {"-30", 3030 * time.Millisecond}, {"30s", 3030 * time.Millisecond}, {"86401", 3030 * time.Millisecond}} {
		t.Run("tenure.dev/ttl "+tc.ttl, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := lease("9", "", 1)
				l.Annotations = map[string]string{kube.AnnotationTTL: tc.ttl}
				r, err := kube.NewRecord(l, tenure.Now(), 0.01)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(tc.wait - 10*time.Millisecond)
				if r.TakeableFor("bob#2", 3*time.Second) {
					t.Fatalf("Takeable %s after the clear = true; want false until %s", tc.wait-10*time.Millisecond, tc.wait)
				}
				time.Sleep(20 * time.Millisecond)
				if !r.TakeableFor("bob#2", 3*time.Second) {
					t.Fatalf("Takeable %s after the clear = false; want true", tc.wait+10*time.Millisecond)
				}
			})
		})
	}
}

// TestExpiryRuleEmpty: a Lease that bears no trace of a holder (Acquire and
// ClaimPartitions create one so before they grant it) is free at once; a
// Lease with any one trace of a grant (a time, a duration, transitions, a
// token or a release mark) and no holder is a clear, which a contender
// waits out.
func TestExpiryRuleEmpty(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC))
	secs, zero, none := int32(1), int32(0), ""
	empty := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "k", ResourceVersion: "9",
		Labels: map[string]string{kube.LabelManagedBy: "tenure"}, Annotations: map[string]string{kube.AnnotationKey: "k"}}}
	traces := map[string]func(l *coordv1.Lease){
		"an empty holder":      func(l *coordv1.Lease) { l.Spec.HolderIdentity = &none },
		"an acquireTime":       func(l *coordv1.Lease) { l.Spec.AcquireTime = &at },
		"a renewTime":          func(l *coordv1.Lease) { l.Spec.RenewTime = &at },
		"a duration":           func(l *coordv1.Lease) { l.Spec.LeaseDurationSeconds = &secs },
		"transitions":          func(l *coordv1.Lease) { l.Spec.LeaseTransitions = &zero },
		"a token annotation":   func(l *coordv1.Lease) { l.Annotations[kube.AnnotationToken] = "8,0,alice#1" },
		"a release annotation": func(l *coordv1.Lease) { l.Annotations[kube.AnnotationReleased] = "8,0,alice#1" },
	}
	synctest.Test(t, func(t *testing.T) {
		r, err := kube.NewRecord(empty, tenure.Now(), 0.01)
		if err != nil {
			t.Fatal(err)
		}
		if !r.TakeableFor("bob#2", 10*time.Second) {
			t.Fatal("an empty Lease: Takeable at first sighting = false; want true")
		}
	})
	for name, trace := range traces {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := empty.DeepCopy()
				trace(l)
				r, err := kube.NewRecord(l, tenure.Now(), 0.01)
				if err != nil {
					t.Fatal(err)
				}
				wantFree := name == "an empty holder" // a nil and an empty holder are one
				if got := r.TakeableFor("bob#2", 10*time.Second); got != wantFree {
					t.Fatalf("Takeable at first sighting = %v; want %v", got, wantFree)
				}
			})
		})
	}
}

// TestTokenOf: the token is the bound annotation's, else the Lease's own
// resourceVersion.
func TestTokenOf(t *testing.T) {
	l := lease("90", "alice#1", 10)
	bound := kube.TokenAnnotation(77, l.Spec.AcquireTime.Time, "alice#1")
	cases := []struct {
		name       string
		annotation string
		want       uint64
	}{
		{"no annotation: client-go's holder, or an edit's", "", 90},
		{"bound", bound, 77},
		{"another holder's", kube.TokenAnnotation(77, l.Spec.AcquireTime.Time, "bob#2"), 90},
		{"another acquireTime's (client-go kept it)", kube.TokenAnnotation(77, l.Spec.AcquireTime.Add(time.Second), "alice#1"), 90},
		{"greater than the resourceVersion", kube.TokenAnnotation(91, l.Spec.AcquireTime.Time, "alice#1"), 90},
		{"garbage", "x,y,alice#1", 90},
	}
	for _, tc := range cases {
		l := l.DeepCopy()
		if tc.annotation != "" {
			l.Annotations = map[string]string{kube.AnnotationToken: tc.annotation}
		}
		r, err := kube.NewRecord(l, tenure.Now(), 0.01)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Token(); got != tc.want {
			t.Errorf("%s: token = %d; want %d", tc.name, got, tc.want)
		}
	}
}

// TestIncomparableVersion: a resourceVersion that is not an ordered
// integer is refused, naming it.
func TestIncomparableVersion(t *testing.T) {
	for _, rv := range []string{"", "0", "abc", "012", "99999999999999999999999"} {
		_, err := kube.NewRecord(lease(rv, "alice#1", 10), tenure.Now(), 0.01)
		if !errors.Is(err, kube.ErrIncomparable) || !strings.Contains(err.Error(), fmt.Sprintf("%q", rv)) {
			t.Errorf("resourceVersion %q: error = %v; want one wrapping kube.ErrIncomparable and naming it", rv, err)
		}
	}
}
