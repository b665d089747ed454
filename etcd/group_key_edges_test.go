package etcd_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/partition"
)

// TestLongGroupPartitionKeys claims partitions of groups whose names are
// near the 200-byte key limit: a partition key of 200 bytes is granted and
// listed both by GroupPartitions and by List (tenure status); one that
// would be longer is refused with ErrInvalidKey, as Kubernetes refuses it,
// never granted as a live key that List, ListForeign and `tenure release
// --force` cannot name.
func TestLongGroupPartitionKeys(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, newClient(t, startEtcd(t)))
	fits := strings.Repeat("f", 198) // "fff…/0" is 200 bytes
	m, err := c.JoinGroup(ctx(t), fits, "m", time.Minute, 1)
	if err != nil {
		t.Fatalf("JoinGroup(a group of 198 bytes) error = %v", err)
	}
	res, err := c.ClaimPartitions(ctx(t), m, []string{"0"})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(a 200-byte partition key) = %v, %v; want it granted", res, err)
	}
	assertListed(t, c, fits, res[0].Grant)

	long := strings.Repeat("l", 200) // "lll…/0" would be 202 bytes
	m, err = c.JoinGroup(ctx(t), long, "m", time.Minute, 1)
	if err != nil {
		t.Fatalf("JoinGroup(a group of 200 bytes) error = %v", err)
	}
	res, err = c.ClaimPartitions(ctx(t), m, []string{"0"})
	if err == nil && len(res) == 1 && res[0].Err == nil {
		gs, _ := c.List(ctx(t), long)
		t.Fatalf("ClaimPartitions(a 202-byte partition key) granted %s, which List(group) shows as %v; want ErrInvalidKey", res[0].Grant, gs)
	}
	if err == nil && len(res) == 1 {
		err = res[0].Err
	}
	if !errors.Is(err, tenure.ErrInvalidKey) {
		t.Fatalf("ClaimPartitions(a 202-byte partition key) error = %v; want ErrInvalidKey", err)
	}
}

// assertListed checks that g, a partition of group, is what GroupPartitions
// and List report of it.
func assertListed(t *testing.T, c *etcd.Coordinator, group string, g tenure.Grant) {
	t.Helper()
	ps, err := c.GroupPartitions(ctx(t), group)
	if err != nil || len(ps) != 1 || ps[0].Key != g.Key || ps[0].Token != g.Token {
		t.Errorf("GroupPartitions(%d-byte group) = %v, %v; want %s", len(group), ps, err, g)
	}
	ls, err := c.List(ctx(t), group)
	if err != nil || len(ls) != 1 || ls[0].Key != g.Key || ls[0].Token != g.Token {
		t.Errorf("List(%d-byte group) = %v, %v; want %s", len(group), ls, err, g)
	}
}

// TestPrefixWithoutSlash runs two coordinators on one cluster with the
// prefixes "a" and "a/": each has a single key, a group "g" with a
// membership and a partition, and neither sees the other's.
func TestPrefixWithoutSlash(t *testing.T) {
	t.Parallel()
	cl := newClient(t, startEtcd(t))
	cs := []*etcd.Coordinator{newCoordinator(t, cl, etcd.WithPrefix("a")), newCoordinator(t, cl, etcd.WithPrefix("a/"))}
	var members []partition.Member
	var grants [][]tenure.Grant
	for i, c := range cs {
		id := []string{"one", "two"}[i]
		s := mustAcquire(t, c, "g-single", id, time.Minute)
		m, err := c.JoinGroup(ctx(t), "g", id, time.Minute, 1)
		if err != nil {
			t.Fatalf("JoinGroup(g) under prefix %d error = %v", i, err)
		}
		res, err := c.ClaimPartitions(ctx(t), m, []string{"0"})
		if err != nil || res[0].Err != nil {
			t.Fatalf("ClaimPartitions(g/0) under prefix %d = %v, %v; want it granted", i, res, err)
		}
		members = append(members, m)
		grants = append(grants, []tenure.Grant{s, res[0].Grant}) // in key order: "g-single" < "g/0"
	}
	for i, c := range cs {
		ms, err := c.GroupMembers(ctx(t), "g")
		if err != nil || len(ms) != 1 || ms[0].Epoch != members[i].Epoch {
			t.Errorf("GroupMembers(g) under prefix %d = %v, %v; want only %s", i, ms, err, members[i])
		}
		ps, err := c.GroupPartitions(ctx(t), "g")
		if err != nil || len(ps) != 1 || ps[0].Token != grants[i][1].Token {
			t.Errorf("GroupPartitions(g) under prefix %d = %v, %v; want only %s", i, ps, err, grants[i][1])
		}
		ls, err := c.List(ctx(t), "")
		if err != nil || len(ls) != 2 || ls[0].Token != grants[i][0].Token || ls[1].Token != grants[i][1].Token {
			t.Errorf("List() under prefix %d = %v, %v; want only %v", i, ls, err, grants[i])
		}
	}
}
