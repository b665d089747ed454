package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/internal/tcpproxy"

	"github.com/tenure-dev/tenure"
)

// TestTryLateReleaseAfterReclaim: member#1 owns partition 0 (token T1);
// its release of it takes 3s to cross the network and is abandoned after
// 1s; member#1 claims partition 0 again and is granted it; then the late
// release arrives. A second member must not be granted partition 0 while
// member#1's second grant stands.
func TestTryLateReleaseAfterReclaim(t *testing.T) {
	dsn := newDB(t)
	p, viaProxy := proxied(t, dsn)
	viaProxy = pgtest.WithParams(viaProxy, map[string]string{"default_query_exec_mode": "exec", "pool_max_conns": "1"})
	ctx := ctxFor(t, time.Minute)
	c := open(t, dsn)
	late := open(t, viaProxy)
	m1, err := c.JoinGroup(ctx, "jobs", "member#1", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx, m1, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	g1 := res[0].Grant
	if _, err := late.GroupMembers(ctx, "jobs"); err != nil { // its one connection is open
		t.Fatal(err)
	}
	sent := time.Now()
	p.SetLatency(tcpproxy.Up, 3*time.Second)
	actx, cancel := context.WithTimeout(ctx, time.Second)
	relErr := late.ReleasePartitions(actx, m1, []tenure.Grant{g1})
	cancel()
	if relErr == nil {
		t.Fatal("a release through the slow link succeeded")
	}
	res, err = c.ClaimPartitions(ctx, m1, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("claim again = %+v, %v", res, err)
	}
	g1b := res[0].Grant
	time.Sleep(time.Until(sent.Add(4500 * time.Millisecond))) // the release has arrived and run
	m2, err := c.JoinGroup(ctx, "jobs", "member#2", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	res2, err := c.ClaimPartitions(ctx, m2, []string{"0"})
	if err != nil {
		t.Fatal(err)
	}
	lost, cerr := c.CheckPartitions(ctx, m1, []tenure.Grant{g1b})
	t.Logf("first grant %v; abandoned release: %v; second grant %v; member#2's claim %+v; member#1's check: lost %v, %v", g1, relErr, g1b, res2[0], lost, cerr)
	if res2[0].Err == nil {
		t.Errorf("partition 0 granted to member#2 (token %d) while member#1 holds the grant it claimed again (token %d) after abandoning a release that ran late", res2[0].Grant.Token, g1b.Token)
	}
}
