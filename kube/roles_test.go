package kube_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure/kube"
)

// memberLease is the name of the membership Lease of epoch in group, as
// JoinGroup names it: "tm-", 16 hex digits of the group's SHA-256, the
// epoch in 16 hex digits.
func memberLease(group string, epoch uint64) string {
	sum := sha256.Sum256([]byte(group))
	return fmt.Sprintf("tm-%s-%016x", hex.EncodeToString(sum[:])[:16], epoch)
}

// TestLeaseRoles: what a Lease is (a membership of a group, a partition's
// and which membership owns it) follows from its name and annotations, and
// no label, present, removed or forged, changes it.
func TestLeaseRoles(t *testing.T) {
	member := memberLease("g", 7)
	part := kube.LeaseName("g/0")
	labels := map[string]map[string]string{
		"as tenure writes them": nil, // filled per case
		"none":                  {},
		"role member":           {kube.LabelRole: "member", kube.LabelGroup: "0000000000000000"},
		"role partition":        {kube.LabelRole: "partition"},
	}
	tests := []struct {
		name        string
		lease       string
		annotations map[string]string
		tenure      map[string]string // the labels tenure writes
		memberOfG   bool
		partition   bool
		owner       string
	}{
		{"a membership of g", member, map[string]string{kube.AnnotationGroup: "g"},
			map[string]string{kube.LabelRole: "member"}, true, false, ""},
		{"a membership of g with its annotations removed", member, nil,
			map[string]string{kube.LabelRole: "member"}, true, false, ""},
		{"a membership of g moved to h", member, map[string]string{kube.AnnotationGroup: "h"},
			map[string]string{kube.LabelRole: "member"}, true, false, ""},
		{"a membership of h", memberLease("h", 7), map[string]string{kube.AnnotationGroup: "g"},
			map[string]string{kube.LabelRole: "member"}, false, false, ""},
		{"a partition of g", part, map[string]string{kube.AnnotationKey: "g/0", kube.AnnotationMember: member},
			map[string]string{kube.LabelRole: "partition"}, false, true, member},
		{"a partition of g given to h's member", part, map[string]string{kube.AnnotationKey: "g/0", kube.AnnotationMember: memberLease("h", 7)},
			map[string]string{kube.LabelRole: "partition"}, false, true, ""},
		{"a partition of g released", part, map[string]string{kube.AnnotationKey: "g/0"},
			map[string]string{kube.LabelRole: "partition"}, false, false, ""},
		{"a partition's Lease naming another key", part, map[string]string{kube.AnnotationKey: "g/1", kube.AnnotationMember: member},
			map[string]string{kube.LabelRole: "partition"}, false, false, ""},
		{"a key's Lease", "job", nil, map[string]string{}, false, false, ""},
		{"a key's Lease naming a member", "job", map[string]string{kube.AnnotationMember: member}, map[string]string{}, false, false, ""},
		{"a membership of g with a key annotation of another Lease's", member, map[string]string{kube.AnnotationKey: "x"}, map[string]string{}, true, false, ""},
	}
	for _, tc := range tests {
		for how, ls := range labels {
			if ls == nil {
				ls = tc.tenure
			}
			t.Run(tc.name+", labels "+how, func(t *testing.T) {
				l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: tc.lease, Labels: ls, Annotations: tc.annotations}}
				if got := kube.MemberOf(l, "g"); got != tc.memberOfG {
					t.Errorf("MemberOf(g) = %v; want %v", got, tc.memberOfG)
				}
				if owner, ok := kube.PartitionOf(l); ok != tc.partition || owner != tc.owner {
					t.Errorf("PartitionOf() = %q, %v; want %q, %v", owner, ok, tc.owner, tc.partition)
				}
			})
		}
	}
}
