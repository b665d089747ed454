package etcd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
)

// TestNestedPrefixesShareKeys: two coordinators whose prefixes nest
// ("/nest/" and "/nest/app/") share keys: group "app/g" of the first and
// group "g" of the second have the same partition keys, and key "app/jobs"
// of the first is key "jobs" of the second (see WithPrefix). They stay
// safe: a claim of a partition the other group's member holds is refused
// with a *tenure.HeldError naming that member, as is an Acquire of a key
// the other holds, and each keeps its grant; neither lists the other's
// members.
func TestNestedPrefixesShareKeys(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	outer := newCoordinator(t, newClient(t, eps), etcd.WithPrefix("/nest/"))
	inner := newCoordinator(t, newClient(t, eps), etcd.WithPrefix("/nest/app/"))
	ctx := t.Context()
	mi, err := inner.JoinGroup(ctx, "g", "inner#1", time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	mo, err := outer.JoinGroup(ctx, "app/g", "outer#1", time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := inner.ClaimPartitions(ctx, mi, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("inner claim of g/0 = %+v, %v; want a grant", res, err)
	}
	owned := res[0].Grant
	res, err = outer.ClaimPartitions(ctx, mo, []string{"0"})
	var held *tenure.HeldError
	if err != nil || !errors.As(res[0].Err, &held) || held.Holder != "inner#1" || held.Token != owned.Token {
		t.Errorf("outer claim of app/g/0, the key of inner's g/0 = %+v, %v; want a *HeldError naming inner#1, token %d", res, err, owned.Token)
	}
	if lost, err := inner.CheckPartitions(ctx, mi, []tenure.Grant{owned}); err != nil || len(lost) != 0 {
		t.Errorf("inner CheckPartitions() = %v, %v; want g/0 still owned", lost, err)
	}
	for c, group := range map[*etcd.Coordinator]string{outer: "app/g", inner: "g"} {
		if ms, err := c.GroupMembers(ctx, group); err != nil || len(ms) != 1 {
			t.Errorf("GroupMembers(%q) = %v, %v; want its own member only", group, ms, err)
		}
	}
	g, err := inner.Acquire(ctx, "jobs", "inner#1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outer.Acquire(ctx, "app/jobs", "outer#1", time.Minute); !errors.As(err, &held) || held.Holder != "inner#1" {
		t.Errorf("outer Acquire(app/jobs), inner's key jobs = %v; want a *HeldError naming inner#1", err)
	}
	if _, err := inner.Renew(ctx, g); err != nil {
		t.Errorf("inner Renew(jobs) = %v; want it renewed", err)
	}
}
