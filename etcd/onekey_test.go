package etcd_test

import (
	"testing"

	"github.com/tenure-dev/tenure/partition/partitiontest"
)

// TestOneOwnerPerKeyAcrossAPIs: a partition's key (group/name) has one
// owner, whichever API asks (on etcd both are the same etcd key). A
// single-key Acquire of a live partition is refused, naming the key and
// its owner; a claim of a partition whose key
// an Elector holds is refused; once the owner is gone, the other API takes
// the key with a greater token. The group's name has a '/' of its own.
func TestOneOwnerPerKeyAcrossAPIs(t *testing.T) {
	t.Parallel()
	// On etcd a partition and a single key are one etcd key, so the
	// refusal is the ordinary one: it names the member, and Acquire spends
	// no read on finding the group.
	partitiontest.OneOwnerPerKey(t, newCoordinator(t, newClient(t, startEtcd(t))), `"member"`)
}
