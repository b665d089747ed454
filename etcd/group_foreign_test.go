package etcd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestForeignPartitionKeys: a partition key that no member wrote (no
// lease) strands its partition: claims are refused with the key's mod
// revision, never take it over, and GroupPartitions leaves it out;
// ListForeign on the group's prefix lists it, RemoveForeign frees it, and
// the next claim's token is greater. Membership keys that do not parse
// are no members.
func TestForeignPartitionKeys(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	m, err := c.JoinGroup(ctx(t), "g", "w1", 5*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	put, err := client.Put(ctx(t), c.EtcdKey("g/0"), "mallory#00000000")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"#members/g#nolease", "#members/g#0000000000000001#ghost"} {
		if _, err := client.Put(ctx(t), c.EtcdKey(k), "x"); err != nil {
			t.Fatal(err)
		}
	}
	rev := uint64(put.Header.Revision)
	for range 2 { // a second claim does not take it over either
		res, err := c.ClaimPartitions(ctx(t), m, []string{"0", "1"})
		if err != nil {
			t.Fatal(err)
		}
		var held *tenure.HeldError
		if !errors.As(res[0].Err, &held) || held.Token != rev || res[1].Err != nil {
			t.Fatalf("ClaimPartitions = %+v; want g/0 held with token %d, g/1 claimed", res, rev)
		}
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 1 || ms[0].ID != "w1" {
		t.Errorf("GroupMembers = %+v, %v; want w1 alone", ms, err)
	}
	if gs, err := c.GroupPartitions(ctx(t), "g"); err != nil || len(gs) != 1 || gs[0].Key != "g/1" {
		t.Errorf("GroupPartitions = %+v, %v; want g/1 alone", gs, err)
	}
	rs, err := c.ListForeign(ctx(t), "g/")
	if err != nil || len(rs) != 1 || rs[0].Key != "g/0" || rs[0].Token != rev || rs[0].Reason != "no lease" {
		t.Fatalf("ListForeign(g/) = %+v, %v; want g/0 with no lease at revision %d", rs, err, rev)
	}
	if ok, err := c.RemoveForeign(ctx(t), rs[0]); !ok || err != nil {
		t.Fatalf("RemoveForeign = %v, %v; want removed", ok, err)
	}
	res, err := c.ClaimPartitions(ctx(t), m, []string{"0"})
	if err != nil || res[0].Err != nil || res[0].Grant.Token <= rev {
		t.Fatalf("ClaimPartitions after RemoveForeign = %+v, %v; want claimed with a token greater than %d", res, err, rev)
	}
	ms, err := c.ListForeign(ctx(t), "#members/")
	t.Logf("ListForeign(#members/) = %+v, %v", ms, err)
}
