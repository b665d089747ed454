package partition_test

// Regression test of an adversary's finding: two Groups of one process
// given one Holder and one Instance ran one group on the memory
// coordinator, each JoinGroup replacing the other's membership and freeing
// its partitions while the other still ran them. Group.Run now refuses the
// second, and memory.JoinGroup leaves an earlier membership of the same id
// alone; the oracle still judges every act, so that an overlap is caught
// if both go.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/display"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// TestSameIdentityMembers: two Groups of one process, given the
// same Holder and the same Instance, run one group on one coordinator. The
// second's Run must be refused, naming the group and the identity; no act
// of either may be unbacked by the coordinator; once the first has left,
// the second runs every partition.
func TestSameIdentityMembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 4)
		defer c.close()
		o := &partitionOracle{c: c, acts: map[string]int{}}
		c.fn = o.fn
		c.start("a")
		c.await("a owns the partitions", 5*time.Second, c.settled)
		cfg := c.cfg
		cfg.Holder = "a" // and cfg.Instance is the cluster's, as a's
		twin, err := partition.New(c.coord, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- twin.Run(ctx, o.fn) }()
		time.Sleep(10 * time.Second)
		cancel()
		err = <-done
		want := []string{`"jobs"`, display.Holder(twin.Identity())}
		if !errors.Is(err, tenure.ErrInvalidConfig) || !strings.Contains(err.Error(), want[0]) || !strings.Contains(err.Error(), want[1]) {
			t.Errorf("second Group's Run() = %v; want ErrInvalidConfig naming %s", err, strings.Join(want, " and "))
		}

		// The first leaves: the second runs now, and takes every partition.
		c.stop("a")
		ctx, cancel = context.WithCancel(context.Background())
		n := &node{g: twin, cancel: cancel, done: make(chan error, 1)}
		go func() { n.done <- twin.Run(ctx, o.fn) }()
		c.nodes["a-twin"] = n
		c.await("the second owns the partitions", 5*time.Second, c.settled)
		c.close()
		if v := o.violations(); len(v) > 0 {
			if len(v) > 5 {
				v = append(v[:5], fmt.Sprintf("… and %d more", len(v)-5))
			}
			t.Fatalf("acts unbacked by the coordinator:\n  %s", strings.Join(v, "\n  "))
		}
	})
}
