package partition_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
)

// failingCheck is a member's link to the memory coordinator whose check of
// the partitions owned fails, with an error retrying may cure, while fail
// is set; its membership renewals answer as usual.
type failingCheck struct {
	*memory.Coordinator
	fail atomic.Bool
}

func (l *failingCheck) CheckPartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) ([]tenure.Grant, error) {
	if l.fail.Load() {
		return nil, errors.New("check unavailable")
	}
	return l.Coordinator.CheckPartitions(ctx, m, gs)
}

// TestFailedCheckExtendsNoTerm: a membership renewal that answers while the
// check of the partitions owned sent beside it fails extends no term: the
// terms end by the deadline of the last renewal whose check answered, a
// safe lease after it, though every membership renewal since has answered.
func TestFailedCheckExtendsNoTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 2) // TTL 3s, Margin 300ms: a safe lease under 2.7s
		defer c.close()
		link := &failingCheck{Coordinator: c.coord}
		c.wrap = map[string]partition.Coordinator{"a": link}
		var mu sync.Mutex
		var terms []*tenure.Term
		c.fn = func(ctx context.Context, _ partition.Partition, term *tenure.Term) error {
			mu.Lock()
			terms = append(terms, term)
			mu.Unlock()
			<-ctx.Done()
			return nil
		}
		c.start("a")
		c.await("a owns the partitions", 5*time.Second, c.settled)
		link.fail.Store(true)
		failed := time.Now()
		mu.Lock()
		first := terms[0]
		mu.Unlock()
		select {
		case <-first.Context().Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("a's term still live 10s after its checks began to fail (renewals answering); want it ended within a safe lease")
		}
		if took := time.Since(failed); took > 3*time.Second {
			t.Errorf("a's term ended %s after its checks began to fail; want within a safe lease (under 2.7s)", took)
		}
		link.fail.Store(false)
	})
}
