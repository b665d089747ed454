package memory_test

import (
	"testing"

	"github.com/tenure-dev/tenure/partition/partitiontest"
)

// TestOneOwnerPerKeyAcrossAPIs: a partition's key (group/name) has one
// owner, whichever API asks. A single-key Acquire of a live partition is
// refused, naming the key and the group; a claim of a partition whose key
// an Elector holds is refused; once the owner is gone, the other API takes
// the key with a greater token. The group's name has a '/' of its own.
func TestOneOwnerPerKeyAcrossAPIs(t *testing.T) {
	partitiontest.OneOwnerPerKey(t, newCoord(t), `group "team/jobs"`)
}
