package etcd_test

import (
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// TestForeignKeys: keys tenure did not write as they stand (no lease, a
// lease longer than a day, a value that is not a holder identity) are
// listed by ListForeign and refused by Acquire, never taken over; grants
// and keys that are not tenure keys are not listed. RemoveForeign deletes
// a record only as it was read, and the next grant's token is greater.
func TestForeignKeys(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)

	g, err := c.Acquire(ctx(t), "f/grant", "h1", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	long, err := client.Grant(ctx(t), 200000)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []struct {
		key, value string
		opts       []clientv3.OpOption
	}{
		{"f/nolease", "mallory#00000000", nil},
		{"f/empty", "", nil},
		{"f/long", "mallory", []clientv3.OpOption{clientv3.WithLease(long.ID)}},
		{"f/not a key", "x", nil},
	} {
		if _, err := client.Put(ctx(t), c.EtcdKey(kv.key), kv.value, kv.opts...); err != nil {
			t.Fatal(err)
		}
	}

	got, err := c.ListForeign(ctx(t), "f/")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		key       string
		malformed bool
		never     bool
	}{{"f/empty", true, true}, {"f/long", false, false}, {"f/nolease", false, true}}
	if len(got) != len(want) {
		t.Fatalf("ListForeign(f/) = %+v; want %d records", got, len(want))
	}
	for i, w := range want {
		r := got[i]
		if r.Key != w.key || r.Malformed != w.malformed || (r.TTL < 0) != w.never || r.Reason == "" || r.Token == 0 {
			t.Errorf("ListForeign(f/)[%d] = %+v; want key %s, malformed %v, never expires %v, a reason and a token", i, r, w.key, w.malformed, w.never)
		}
	}

	r := got[2] // f/nolease
	if _, err := c.Acquire(ctx(t), r.Key, "h1", time.Second); !errors.Is(err, tenure.ErrHeld) {
		t.Fatalf("Acquire of a key without a lease: %v; want ErrHeld", err)
	}
	stale := r
	stale.Token--
	if ok, err := c.RemoveForeign(ctx(t), stale); ok || err != nil {
		t.Errorf("RemoveForeign with another revision = %v, %v; want false, nil", ok, err)
	}
	if ok, err := c.RemoveForeign(ctx(t), r); !ok || err != nil {
		t.Fatalf("RemoveForeign(%+v) = %v, %v; want true, nil", r, ok, err)
	}
	ng, err := c.Acquire(ctx(t), r.Key, "h1", time.Second)
	if err != nil || ng.Token <= r.Token || ng.Token <= g.Token {
		t.Fatalf("Acquire after RemoveForeign = %v, %v; want a token above %d", ng, err, r.Token)
	}
	if rest, err := c.ListForeign(ctx(t), "f/n"); err != nil || len(rest) != 0 {
		t.Errorf("ListForeign(f/n) after the removal and a grant = %+v, %v; want none", rest, err)
	}
}
