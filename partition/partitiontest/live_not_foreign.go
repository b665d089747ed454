package partitiontest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// foreignLister is what a coordinator that can hold records no grant
// wrote implements (see tenure.ForeignRecord).
type foreignLister interface {
	ListForeign(ctx context.Context, prefix string) ([]tenure.ForeignRecord, error)
}

// liveNotForeign checks that what live members wrote is never listed as
// foreign, under any prefix: not their memberships (two of one ID
// among them), not the partitions they own, so that no tool offers to
// free them. Coordinators without ListForeign hold no such records.
func (s suite) liveNotForeign(t *testing.T) {
	a, b := s.group(t), s.group(t)
	l, ok := a.(foreignLister)
	if !ok {
		return
	}
	g := groupName(t)
	id := fmt.Sprintf("live%d#1", time.Now().UnixNano())
	// Memberships that live a minute: one that expired under load would
	// rightly be listed.
	first := joinFor(t, a, g, id, 2, time.Minute)
	claimAll(t, a, first, "0")
	second := joinFor(t, b, g, id, 2, time.Minute)
	other := joinFor(t, b, g, id+"0", 2, time.Minute)
	claimAll(t, b, other, "1")
	for _, prefix := range []string{"", g, g + "/"} {
		rs, err := l.ListForeign(ctx(t), prefix)
		if err != nil {
			t.Fatalf("ListForeign(%q) error = %v", prefix, err)
		}
		for _, r := range rs {
			if r.Holder == first.ID || r.Holder == other.ID || r.Member == first.ID || r.Member == other.ID {
				t.Errorf("ListForeign(%q) lists %+v, written by a live member (memberships %d, %d, %d); want none of theirs", prefix, r, first.Epoch, second.Epoch, other.Epoch)
			}
		}
	}
}
