package partition_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestStrangerLogsOnce: a partition a member is to run, held by a grant
// that is no member's (a single key's grant of the partition's key, here
// for an hour), makes the member say once which record holds it and the
// command that frees it, then sum it up every 30 s (50 s: one warning, one
// summary), and say when it ends: once the grant is released, the member
// runs the partition and logs that the wait is over.
func TestStrangerLogsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 2)
		defer c.close()
		var logs lockedBuffer
		c.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		g, err := c.coord.Acquire(context.Background(), "jobs/0", "mallory#00000000", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		c.start("a")
		time.Sleep(50 * time.Second)
		var first, summaries []string
		for _, w := range logs.warnings() {
			switch {
			case strings.Contains(w, "record ends or is removed (still failing)"):
				summaries = append(summaries, w)
			case strings.Contains(w, "record ends or is removed"):
				first = append(first, w)
			}
		}
		if len(first) != 1 || len(summaries) != 1 {
			t.Fatalf("50 s waiting for jobs/0: %d warnings and %d summaries that it waits for a record no member holds; want 1 and 1:\n%q", len(first), len(summaries), logs.warnings())
		}
		for _, want := range []string{"partition=jobs/0", "held_by=mallory#00000000", "token=" + strconv.FormatUint(g.Token, 10), `remedy="tenure release --force --key jobs/0"`} {
			if !strings.Contains(first[0], want) {
				t.Errorf("the warning %q does not say %s", first[0], want)
			}
		}
		if own := c.owners(); own["jobs/1"] != "a" || own["jobs/0"] != "" {
			t.Errorf("owners = %v; want a running jobs/1 only", own)
		}
		if err := c.coord.Release(context.Background(), g); err != nil {
			t.Fatal(err)
		}
		c.await("a runs both partitions", 10*time.Second, c.settled)
		logs.mu.Lock()
		over := strings.Contains(logs.b.String(), "record ends or is removed: works again")
		logs.mu.Unlock()
		if !over {
			t.Error("a runs jobs/0, but nothing says the wait is over")
		}
	})
}

// TestStrangerOfOwnIdentityLogs: as TestStrangerLogsOnce, but the single
// key's grant of jobs/0 is held under the member's own identity (an
// Elector of the same process on the partition's key, or a record another
// program wrote naming it). The claim is refused with a HeldError naming
// that identity, which is also a member's: the member must still say, once
// it has waited a TTL, that the partition waits for a record that is no
// member's, and must not run it.
func TestStrangerOfOwnIdentityLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 2)
		defer c.close()
		var logs lockedBuffer
		c.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		if _, err := c.coord.Acquire(context.Background(), "jobs/0", "a#1", time.Hour); err != nil {
			t.Fatal(err)
		}
		c.start("a")
		time.Sleep(50 * time.Second)
		warned := 0
		for _, w := range logs.warnings() {
			if strings.Contains(w, "record ends or is removed") && strings.Contains(w, "partition=jobs/0") {
				warned++
			}
		}
		if warned == 0 {
			t.Errorf("50 s waiting for jobs/0, held by a single key's grant under a's own identity: no warning that it waits for a record no member holds; warnings:\n%q", logs.warnings())
		}
		if own := c.owners(); own["jobs/0"] != "" {
			t.Errorf("owners = %v; want jobs/0 run by no member", own)
		}
	})
}
