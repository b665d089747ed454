package etcd

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tenure-dev/tenure/internal/inputs"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// List returns the live grants on every key under prefix, sorted by key,
// each with the time left on its lease (whole seconds, rounded down, as etcd
// reports it). See tenure.Coordinator. Keys whose lease has expired but that etcd
// has not deleted yet are left out. It costs one range read plus one lease
// lookup per distinct lease (one per holder and TTL).
func (c *Coordinator) List(ctx context.Context, prefix string) ([]tenure.Grant, error) {
	op := fmt.Sprintf("etcd: list %q", prefix)
	if err := c.begin(ctx, op, inputs.Prefix(prefix)); err != nil {
		return nil, err
	}
	resp, err := c.client.Get(ctx, c.EtcdKey(prefix), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	left := make(map[clientv3.LeaseID]time.Duration) // -1: expired
	out := make([]tenure.Grant, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		key := strings.TrimPrefix(string(kv.Key), c.prefix)
		if tenure.ValidateKey(key) != nil {
			continue // not a tenure key
		}
		id := clientv3.LeaseID(kv.Lease)
		ttl, seen := left[id]
		if !seen {
			if _, ttl, err = c.leaseTTL(ctx, id); err != nil {
				return nil, fmt.Errorf("%s: %w", op, err)
			}
			left[id] = ttl
		}
		if ttl < 0 {
			continue
		}
		out = append(out, tenure.Grant{Key: key, Holder: string(kv.Value), Token: uint64(kv.ModRevision), TTL: ttl})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
