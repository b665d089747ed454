package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
)

// TestLateNoGroupsAcquireAfterAGroupAppears: a coordinator that has never
// seen the group tables sends the acquisition of "jobs/0" — a key that can
// name partition 0 of group jobs — as its first, one-statement form, which
// grants only while neither group table exists (the key's row exists and
// is free, so the one statement is all it takes). The statement takes 3s to
// cross the network and is abandoned after 1s. Meanwhile a member joins
// group jobs (making the group tables) and claims partition 0. When the
// statement arrives, the tables exist: it must grant nothing, and the
// member's grant must stand. The control run, where no member joins, shows
// that the abandoned statement does run late: it grants the free key.
func TestLateNoGroupsAcquireAfterAGroupAppears(t *testing.T) {
	t.Parallel()
	for _, memberJoins := range []bool{true, false} {
		name := "a member claims the partition meanwhile"
		if !memberJoins {
			name = "control: no member"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const key = "jobs/0"
			dsn := newDB(t)
			p, viaProxy := proxied(t, dsn)
			// One round trip per statement and one connection, open before
			// the link slows (as in TestLateStatementsOnPostgres).
			viaProxy = pgtest.WithParams(viaProxy, map[string]string{"default_query_exec_mode": "exec", "pool_max_conns": "1"})
			ctx := ctxFor(t, time.Minute)
			late := open(t, viaProxy)
			c := open(t, dsn)
			// The key's row exists and is free, so that one statement can
			// grant it.
			g0, err := c.Acquire(ctx, key, "first#1", 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Release(ctx, g0); err != nil {
				t.Fatal(err)
			}
			if _, _, err := late.Leader(ctx, key); err != nil {
				t.Fatal(err)
			}
			sent := time.Now()
			p.SetLatency(tcpproxy.Up, 3*time.Second)
			actx, cancel := context.WithTimeout(ctx, time.Second)
			_, acqErr := late.Acquire(actx, key, "late#1", 30*time.Second)
			cancel()
			if acqErr == nil {
				t.Fatal("an acquisition through the slow link succeeded")
			}
			if !memberJoins {
				time.Sleep(time.Until(sent.Add(4500 * time.Millisecond))) // the statement has arrived and run
				g, ok, err := c.Leader(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if !ok || g.Holder != "late#1" {
					t.Fatalf("control: after the abandoned acquisition arrived, Leader(%s) = %+v, %v; want late#1: the late statement did not run, so the other run shows nothing", key, g, ok)
				}
				return
			}
			m := join(ctx, t, c, "member#1")
			mg := claim0(ctx, t, c, m)
			if time.Since(sent) > 2500*time.Millisecond {
				t.Fatalf("the member joined and claimed %v after the statement was sent: too late to be before it arrives (3s)", time.Since(sent))
			}
			time.Sleep(time.Until(sent.Add(4500 * time.Millisecond)))
			g, ok, err := c.Leader(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			lost, err := c.CheckPartitions(ctx, m, []tenure.Grant{mg})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("member's grant %v; abandoned acquisition: %v; leader after it arrived: %+v %v; member lost %v", mg, acqErr, g, ok, lost)
			if g.Holder == "late#1" || len(lost) > 0 {
				t.Errorf("the late one-statement acquisition of %s, sent before the group tables existed, granted it over member#1's live partition grant (leader %+v, member lost %v)", key, g, lost)
			}
		})
	}
}
