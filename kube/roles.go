package kube

import (
	"strings"

	coordv1 "k8s.io/api/coordination/v1"
)

// What a Lease is, a key's, a partition's or a membership's, is decided by
// its name and its annotations, never by its labels: tenure writes
// LabelGroup, LabelRole and LabelManagedBy for people's selectors, and
// anyone may remove or change a label, so a label edited changes no
// answer. A group's operations list by LabelGroup to keep the list short,
// and read each Lease listed by these facts; a claim reads by name an owner
// missing from that list, and decides on a list of every Lease when it
// reads as gone. tenure's own writes label its Leases again (labelAs): a
// member's renewal its membership Lease, its check its partitions'.
//
//   - A membership Lease of group g is named memberName(g, epoch) and holds
//     no key (it has no AnnotationKey, and its name is refused as a key).
//     Its member renews it while its AnnotationGroup is g (see
//     Coordinator.memberLive); a claimer counts it live by its
//     resourceVersion whatever its annotations say, so that a member told
//     it is lost stops before its partitions are taken.
//   - A partition's Lease holds key g/name, and its AnnotationMember is
//     spelled as a membership Lease's name; its owner is the membership
//     Lease of g it names (one of another group owns nothing). Acquire
//     refuses it.
//   - Any other Lease that holds a key is that key's, judged by its holder
//     and resourceVersion alone.

// memberShaped reports whether name is spelled as memberName spells a
// membership Lease's name: "tm-", 16 hex digits, '-', 16 hex digits.
func memberShaped(name string) bool {
	if len(name) != len("tm-")+2*hashLen+1 || !strings.HasPrefix(name, "tm-") || name[3+hashLen] != '-' {
		return false
	}
	for i, c := range name[3:] {
		if i != hashLen && ('0' > c || c > '9') && ('a' > c || c > 'f') {
			return false
		}
	}
	return true
}

// holdsKey reports whether Lease l is the Lease of a tenure key (see
// keyOf).
func holdsKey(l *coordv1.Lease) bool {
	_, ok := keyOf(l)
	return ok
}

// membership reports whether Lease l is a membership Lease of some group:
// spelled as one and the Lease of no key.
func membership(l *coordv1.Lease) bool { return memberShaped(l.Name) && !holdsKey(l) }

// memberOf reports whether Lease l is a membership Lease of group by its
// name, whatever its annotations and labels say.
func memberOf(l *coordv1.Lease, group string) bool {
	return l.Name == memberName(group, epochOf(l.Name)) && !holdsKey(l)
}

// groupOfKey returns the group a partition key belongs to, "g" of "g/name"
// (partition names have no '/'); ok is false for a key without '/'.
func groupOfKey(key string) (group string, ok bool) {
	i := strings.LastIndexByte(key, '/')
	return key[:max(i, 0)], i > 0
}

// partitionOf reports whether Lease l is a partition's Lease: it holds a
// key group/name and its AnnotationMember is spelled as a membership
// Lease's name. owner is that name when it is a membership Lease of group,
// the only kind a member can write there; "" when it names another
// group's (an edit by hand), which owns nothing. A partition released or
// freed by an edit of its annotations is a key's Lease.
func partitionOf(l *coordv1.Lease) (owner string, ok bool) {
	key, isKey := keyOf(l)
	group, isPart := groupOfKey(key)
	name := l.Annotations[AnnotationMember]
	if !isKey || !isPart || !memberShaped(name) {
		return "", false
	}
	if name != memberName(group, epochOf(name)) {
		return "", true
	}
	return name, true
}

// ownerOf returns the name of the membership Lease that owns partition
// Lease l (see partitionOf); "" when l is no partition's Lease or names no
// membership Lease of its group.
func ownerOf(l *coordv1.Lease) string {
	owner, _ := partitionOf(l)
	return owner
}

// labelAs writes on l the labels tenure writes on the Leases of group in
// role ("member" or "partition"), for people's selectors and the short
// list of listGroup.
func labelAs(l *coordv1.Lease, group, role string) {
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[LabelGroup], l.Labels[LabelRole], l.Labels[LabelManagedBy] = groupHash(group), role, "tenure"
}
