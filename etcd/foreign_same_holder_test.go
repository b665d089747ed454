package etcd_test

import (
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// TestAcquireBySameHolderOfForeignKey: Acquire naming the holder a foreign
// key's value names (a key without a lease, a key on a lease longer than a
// day) does not take the key over.
func TestAcquireBySameHolderOfForeignKey(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	long, err := client.Grant(ctx(t), 200000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Put(ctx(t), c.EtcdKey("s/nolease"), "mallory"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Put(ctx(t), c.EtcdKey("s/long"), "mallory", clientv3.WithLease(long.ID)); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"s/nolease", "s/long"} {
		if g, err := c.Acquire(ctx(t), key, "mallory", 5*time.Second); !errors.Is(err, tenure.ErrHeld) {
			t.Errorf("Acquire(%s, mallory) = %v, %v; want ErrHeld: the key is foreign", key, g, err)
		}
	}
	if rs, err := c.ListForeign(ctx(t), "s/"); err != nil || len(rs) != 2 {
		t.Errorf("ListForeign(s/) = %+v, %v; want both keys", rs, err)
	}
}
