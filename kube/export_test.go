package kube

import (
	"time"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/tenure-dev/tenure"
)

// Record exposes the expiry rule to the external tests: Lease l, whose
// resourceVersion was first seen at seen, as a Coordinator with maxDrift
// reads it.
type Record struct {
	r        record
	maxDrift float64
}

// NewRecord reads Lease l as first seen at seen.
func NewRecord(l *coordv1.Lease, seen tenure.Instant, maxDrift float64) (Record, error) {
	rv, err := parseVersion(l.ResourceVersion)
	if err != nil {
		return Record{}, err
	}
	return Record{r: newRecord(l, rv, seen), maxDrift: maxDrift}, nil
}

// Left is the time left before a contender may take the Lease.
func (r Record) Left() time.Duration { return r.r.left(r.maxDrift) }

// Takeable reports whether holder may write a new grant over the Lease.
func (r Record) Takeable(holder string) bool { return r.r.takeable(holder, 0, r.maxDrift) }

// TakeableFor reports whether holder, asking for ttl, may write a new grant
// over the Lease.
func (r Record) TakeableFor(holder string, ttl time.Duration) bool {
	return r.r.takeable(holder, ttl, r.maxDrift)
}

// Token is the fencing token of the grant the Lease holds.
func (r Record) Token() uint64 { return r.r.token }

// TokenAnnotation is tokenAnnotation.
var TokenAnnotation = tokenAnnotation

// Refusal is refusal, for TestRefusalClasses.
var Refusal = refusal

// Foreign is ForeignRecord's reading of the Lease as the record of key;
// clash says its AnnotationKey names another key.
func (r Record) Foreign(key string, clash bool) (tenure.ForeignRecord, bool) {
	return foreignOf(key, r.r.lease, r.r, clash, r.maxDrift)
}

// PartitionOf is partitionOf: whether Lease l is a partition's, and the
// membership Lease that owns it.
var PartitionOf = partitionOf

// MemberOf is memberOf: whether Lease l is a membership Lease of group.
var MemberOf = memberOf
