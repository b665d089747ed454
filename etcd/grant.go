package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// granted is a grant this coordinator made, and the lease it rides on as
// last extended: Renew and Release use the lease without looking it up.
type granted struct {
	holder string
	token  uint64
	secs   int64 // the TTL asked for, whole seconds
	lease  lease
}

// A lease is an etcd lease as granted or last extended: etcd starts its TTL
// no earlier than it receives the request, so it lasts at least until
// sent + ttl on etcd's clock.
type lease struct {
	id   clientv3.LeaseID
	ttl  time.Duration  // as etcd granted it (whole seconds, at least its minimum)
	sent tenure.Instant // when the request that granted or extended it was sent
}

// Acquire grants key to holder in one transaction that puts the key if it
// does not exist, on a lease of its own of at least ttl (whole seconds, at
// least etcd's minimum); the token is the put's revision. The lease may be
// older than the call (granted by holder's last refused Acquire of key, or
// kept by its last Release): Sent is when it was last granted or extended.
// Once the key is on its lease, one more request checks that no other
// process changed the lease since its grant (granted it again under its ID
// for another TTL, or put a key on it); if one did, the key is taken off
// it and put on a new lease.
// A grant holder already has on key is deleted and replaced, unless it is a
// partition that holder owns as a member of the key's group (a membership
// of holder rides the key's lease): the key is held then; if another
// holder takes the key meanwhile, Acquire returns a *tenure.HeldError naming
// it. A key tenure did not write as it stands (one without a lease, put by
// hand or by another program: see ListForeign) is refused like a held key
// and never taken over, however old: only RemoveForeign frees it. See
// tenure.Coordinator.
func (c *Coordinator) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	op := fmt.Sprintf("etcd: acquire %q for %q", key, holder)
	if err := c.begin(ctx, op, tenure.ValidateKey(key), tenure.ValidateHolder(holder), tenure.ValidateTTL(ttl)); err != nil {
		return tenure.Grant{}, err
	}
	secs := ttlSeconds(ttl)
	l, err := c.leaseFor(ctx, key, holder, secs)
	if err != nil {
		return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
	}
	ek := c.EtcdKey(key)
	for range 3 {
		resp, err := c.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(ek), "=", 0)).
			Then(clientv3.OpPut(ek, holder, clientv3.WithLease(l.id))).
			Else(clientv3.OpGet(ek)).
			Commit()
		switch {
		case isLeaseNotFound(err): // the lease expired before the put: grant another
			if l, err = c.grantLease(ctx, secs); err != nil {
				return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
			}
			continue
		case err != nil:
			// Outcome unknown. If the put was applied, the key rides on l,
			// which nothing extends: it expires within the TTL, unless the
			// holder acquires again and supersedes it first.
			return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
		case resp.Succeeded: // another process may have changed l since its grant
			var moved bool
			if l, moved, err = c.checkLease(ctx, key, holder, secs, resp.Header.Revision, l); err != nil {
				return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
			}
			if moved {
				continue // the key was deleted: put it on l, a new lease
			}
			g := tenure.Grant{Key: key, Holder: holder, Token: uint64(resp.Header.Revision), TTL: l.ttl, Sent: l.sent}
			c.remember(g, secs, l)
			c.log.Debug("leadership granted", "key", key, "holder", holder, "token", g.Token, "ttl", g.TTL, "lease", fmt.Sprintf("%x", int64(l.id)))
			return g, nil
		}
		kv := firstKV(resp.Responses[0].GetResponseRange().Kvs)
		if kv == nil {
			continue // deleted since: put again
		}
		held, err := c.heldBy(ctx, key, holder, kv)
		if err != nil {
			return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
		}
		if held {
			c.keepSpare(key, holder, secs, l)
			return tenure.Grant{}, fmt.Errorf("%s: %w", op, &tenure.HeldError{Key: key, Holder: string(kv.Value), Token: uint64(kv.ModRevision)})
		}
	}
	return tenure.Grant{}, fmt.Errorf("%s: the key changed hands during every attempt; try again", op)
}

// heldBy reports whether kv, found on key by holder's Acquire, holds the
// key against holder: it names another holder, or names holder but no
// grant wrote it (foreignWrite), or is a partition holder owns as a member
// (supersede). Holder's own earlier grant is deleted instead; neither held
// nor deleted means the key changed since kv was read.
func (c *Coordinator) heldBy(ctx context.Context, key, holder string, kv *mvccpb.KeyValue) (bool, error) {
	if string(kv.Value) != holder {
		return true, nil
	}
	if held, err := c.foreignWrite(ctx, key, kv); held || err != nil {
		return held, err
	}
	held, err := c.supersede(ctx, key, kv, holder) // the holder's own earlier grant: end it, then put anew
	if err != nil {
		return false, fmt.Errorf("supersede grant with token %d: %w", kv.ModRevision, err)
	}
	return held, nil
}

// supersede deletes kv, holder's grant on key, if it is still that write
// and is not a partition that holder owns as a member of a group: a key
// "group/name" on the lease of a membership of holder in group (its
// memberKey exists) is that membership's grant, and the key is held. It
// reports whether it is; neither held nor deleted means the key changed
// since kv was read.
func (c *Coordinator) supersede(ctx context.Context, key string, kv *mvccpb.KeyValue, holder string) (held bool, err error) {
	ek := string(kv.Key)
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(ek), "=", kv.ModRevision),
		clientv3.Compare(clientv3.Value(ek), "=", holder),
	}
	var member []clientv3.Op
	if group, _, ok := cutLast(key); ok {
		mk := c.memberKey(group, clientv3.LeaseID(kv.Lease), holder)
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(mk), "=", 0))
		member = append(member, clientv3.OpGet(mk))
	}
	resp, err := c.client.Txn(ctx).If(cmps...).Then(clientv3.OpDelete(ek)).Else(member...).Commit()
	if err != nil || resp.Succeeded || len(member) == 0 {
		return false, err
	}
	m := firstKV(resp.Responses[0].GetResponseRange().Kvs)
	return m != nil && m.Lease == kv.Lease, nil
}

// cutLast cuts key at its last '/': a partition key is "group/name".
func cutLast(key string) (group, name string, ok bool) {
	i := strings.LastIndex(key, "/")
	if i < 0 {
		return "", "", false
	}
	return key[:i], key[i+1:], true
}

// remember records that g rides on lease l, asked for secs seconds, as l
// was last granted or extended.
func (c *Coordinator) remember(g tenure.Grant, secs int64, l lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leases[g.Key] = granted{holder: g.Holder, token: g.Token, secs: secs, lease: l}
}

// grantOf returns what this coordinator remembers of g, if it granted it.
func (c *Coordinator) grantOf(g tenure.Grant) (granted, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.leases[g.Key]
	return r, ok && r.token == g.Token && r.holder == g.Holder
}

// forget drops what is remembered of g, which has ended.
func (c *Coordinator) forget(g tenure.Grant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.leases[g.Key]; ok && r.token == g.Token {
		delete(c.leases, g.Key)
	}
}

// deleteIf deletes etcd key ek if it is still the write at rev by holder,
// and reports whether it did.
func (c *Coordinator) deleteIf(ctx context.Context, ek string, rev int64, holder string) (bool, error) {
	resp, err := c.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(ek), "=", rev),
			clientv3.Compare(clientv3.Value(ek), "=", holder)).
		Then(clientv3.OpDelete(ek)).
		Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

// Renew extends g's lease with one KeepAliveOnce (Sent is when it was sent)
// and reads the key to check that it is still g: a key released or deleted
// may leave its lease alive. Both are sent at once (see keepAliveAndRead). A
// grant made by another coordinator takes one more read first, to find its
// lease. The TTL it reports is the lease's, never more than g's: a lease
// that another process revoked and granted again under its ID, for longer,
// does not lengthen the grant. A grant whose key or lease is gone is lost:
// the error wraps tenure.ErrLost. See tenure.Coordinator.
func (c *Coordinator) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	op := fmt.Sprintf("etcd: renew %s", g)
	if err := c.begin(ctx, op, g.Validate()); err != nil {
		return tenure.Grant{}, err
	}
	r, known := c.grantOf(g)
	id := r.lease.id
	if !known {
		var err error
		if id, err = c.readGrant(ctx, g); err != nil {
			return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
		}
	}
	sent := tenure.Now()
	ka, read, err := c.keepAliveAndRead(ctx, g, id, known)
	if isLeaseNotFound(err) {
		c.forget(g)
		return tenure.Grant{}, fmt.Errorf("%s: %w: lease %x expired", op, tenure.ErrLost, int64(id))
	}
	if errors.Is(read, tenure.ErrLost) {
		c.forget(g)
		return tenure.Grant{}, fmt.Errorf("%s: %w", op, read)
	}
	if err != nil {
		return tenure.Grant{}, fmt.Errorf("%s: keepalive of lease %x (outcome unknown): %w", op, int64(id), err)
	}
	if read != nil {
		return tenure.Grant{}, fmt.Errorf("%s: %w", op, read)
	}
	// Never longer than the grant was made with: a lease revoked and
	// granted again under its ID by another process may report more.
	g.TTL, g.Sent = min(g.TTL, time.Duration(ka.TTL)*time.Second), sent
	if known {
		c.remember(g, r.secs, lease{id: id, ttl: g.TTL, sent: sent})
	}
	return g, nil
}

// getKey reads etcd key ek: nil when it does not exist.
func (c *Coordinator) getKey(ctx context.Context, ek string) (*mvccpb.KeyValue, error) {
	resp, err := c.client.Get(ctx, ek)
	if err != nil {
		return nil, err
	}
	return firstKV(resp.Kvs), nil
}

// firstKV is the first of kvs, or nil when there is none.
func firstKV(kvs []*mvccpb.KeyValue) *mvccpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	return kvs[0]
}

// readGrant reads g's key and returns the lease it rides on; the error wraps
// tenure.ErrLost when the key is not g's as g's grant wrote it.
func (c *Coordinator) readGrant(ctx context.Context, g tenure.Grant) (clientv3.LeaseID, error) {
	kv, err := c.getKey(ctx, c.EtcdKey(g.Key))
	switch {
	case err != nil:
		return 0, err
	case kv == nil:
		return 0, fmt.Errorf("%w: key is free", tenure.ErrLost)
	case uint64(kv.ModRevision) != g.Token:
		return 0, fmt.Errorf("%w: key now held by %q with token %d", tenure.ErrLost, kv.Value, kv.ModRevision)
	case string(kv.Value) != g.Holder:
		return 0, fmt.Errorf("%w: key with token %d is held by %q", tenure.ErrLost, kv.ModRevision, kv.Value)
	case kv.Lease == int64(clientv3.NoLease):
		return 0, fmt.Errorf("%w: key has no lease (not written by tenure?)", tenure.ErrLost)
	}
	return clientv3.LeaseID(kv.Lease), nil
}

// Release deletes g's key if it is still g, in one transaction; a grant
// already gone is not an error. The lease of a grant this coordinator made
// is kept, carrying no key, for the holder's next Acquire of the key, and
// expires on its own if there is none. See tenure.Coordinator.
func (c *Coordinator) Release(ctx context.Context, g tenure.Grant) error {
	op := fmt.Sprintf("etcd: release %s", g)
	if err := c.begin(ctx, op, g.Validate()); err != nil {
		return err
	}
	deleted, err := c.deleteIf(ctx, c.EtcdKey(g.Key), int64(g.Token), g.Holder)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if r, ok := c.grantOf(g); ok {
		c.forget(g)
		if deleted { // the lease carries nothing now
			c.keepSpare(g.Key, g.Holder, r.secs, r.lease)
		}
	}
	return nil
}

// Leader returns the live grant on key, with the TTL of its lease as
// granted. A key whose lease has just expired, which etcd deletes a moment
// later, is reported held with TTL 0 (Acquire refuses it too). See
// tenure.Coordinator.
func (c *Coordinator) Leader(ctx context.Context, key string) (tenure.Grant, bool, error) {
	op := fmt.Sprintf("etcd: leader of %q", key)
	if err := c.begin(ctx, op, tenure.ValidateKey(key)); err != nil {
		return tenure.Grant{}, false, err
	}
	kv, err := c.getKey(ctx, c.EtcdKey(key))
	if err != nil {
		return tenure.Grant{}, false, fmt.Errorf("%s: %w", op, err)
	}
	ev, err := c.eventOf(ctx, key, kv)
	if err != nil {
		return tenure.Grant{}, false, fmt.Errorf("%s: %w", op, err)
	}
	return ev.Grant, ev.Held, nil
}

// grantLease grants a new lease of secs seconds.
func (c *Coordinator) grantLease(ctx context.Context, secs int64) (lease, error) {
	sent := tenure.Now()
	resp, err := c.client.Grant(ctx, secs)
	if err != nil {
		return lease{}, fmt.Errorf("grant lease: %w", err)
	}
	return lease{id: resp.ID, ttl: time.Duration(resp.TTL) * time.Second, sent: sent}, nil
}

// checkLease checks that lease l, on which holder's Acquire has just put
// key (revision rev), is still the lease Acquire took: granted for l.ttl
// and carrying key alone. Between its grant (or, for a spare, its keeping)
// and the put, the lease carried nothing, and another process may have
// revoked it and granted its ID again (etcd's LeaseGrant takes an ID) for
// another TTL, or put a key of its own on it first, which would make the
// grant look foreign (see ListForeign). If it is, the lease returned is l
// with Sent as late as etcd's expiry allows: the later of l's own Sent (a
// lease of that ID was granted or extended for l.ttl then, and since then
// only extended or granted again for l.ttl) and this check's send less the
// time l has used, when etcd reports a second or more left (it counts the
// TTL left from after the send and truncates it toward zero: 1 means at
// least 1s, but 0 means anything from 1s expired to 1s left) and no more
// than l.ttl: a leader that has not yet promoted its lessor after a leader
// change reports a lease with no expiry yet, 9223372036s left (etcd before
// 3.4.32 and 3.5.14), which would move Sent centuries ahead. The lease at
// etcd ends no sooner than Sent + TTL. If it is not, the key is deleted if
// it is still that put, the lease is left to expire (any key on it is not
// ours), and a new lease of secs seconds is returned, moved true, to put
// key on (and to check again).
func (c *Coordinator) checkLease(ctx context.Context, key, holder string, secs, rev int64, l lease) (_ lease, moved bool, err error) {
	ek := c.EtcdKey(key)
	sent := tenure.Now()
	r, err := c.leaseKeys(ctx, l.id) // left -1: revoked since the put, and the key with it
	switch {
	case err != nil:
		// Outcome unknown: the key rides on l, which nothing extends.
		return l, false, fmt.Errorf("check the lease of this grant: %w", err)
	case r.left >= 0 && r.granted == l.ttl && len(r.keys) == 1 && string(r.keys[0]) == ek:
		if used := sent.Add(r.left - l.ttl); r.left >= time.Second && r.left <= l.ttl && used.Time().After(l.sent.Time()) {
			l.sent = used
		}
		return l, false, nil
	}
	c.log.Warn("lease of the holder's grant was changed by another process before the grant: left to expire, the key put on a new lease",
		"key", key, "holder", holder, "lease", fmt.Sprintf("%x", int64(l.id)))
	if _, err := c.deleteIf(ctx, ek, rev, holder); err != nil {
		return l, false, fmt.Errorf("delete the key put on lease %x, changed by another process (outcome unknown): %w", int64(l.id), err)
	}
	if l, err = c.grantLease(ctx, secs); err != nil {
		return l, false, err
	}
	return l, true, nil
}

// spareKey names a lease granted ahead: for one key, one holder, one TTL.
type spareKey struct {
	key, holder string
	secs        int64
}

// keepSpare keeps l for holder's next Acquire of key, so that it takes the
// key in one transaction: l was granted for an Acquire that found key held,
// or carried holder's grant on key until its Release. No key is attached to
// a spare lease (the put that tried it failed, or the key was deleted), and
// nothing extends it: it expires on its own if it is not used. Another
// process may still change it: Acquire checks it (checkLease).
func (c *Coordinator) keepSpare(key, holder string, secs int64, l lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, old := range c.spares { // too old to use: forget them
		if !fresh(old) {
			delete(c.spares, k)
		}
	}
	c.spares[spareKey{key, holder, secs}] = l
}

// fresh reports whether lease l has at least two thirds of its TTL left,
// as its last grant or extension was sent: enough to start a term on.
func fresh(l lease) bool { return l.sent.Add(l.ttl/3).Until() > 0 }

// leaseFor returns a lease for holder's Acquire of key: the spare kept for
// it, taken so that no other Acquire uses it, when it is fresh; a new one
// otherwise. Acquire checks either with checkLease once its key is on it.
func (c *Coordinator) leaseFor(ctx context.Context, key, holder string, secs int64) (lease, error) {
	k := spareKey{key, holder, secs}
	c.mu.Lock()
	l, ok := c.spares[k]
	delete(c.spares, k)
	c.mu.Unlock()
	if ok && fresh(l) {
		return l, nil
	}
	return c.grantLease(ctx, secs)
}

// leaseTTL returns the TTL lease id was granted with and the time it has
// left (whole seconds, rounded down, as etcd reports it); granted 0 and left
// -1 when it has expired or id is NoLease.
func (c *Coordinator) leaseTTL(ctx context.Context, id clientv3.LeaseID) (granted, left time.Duration, err error) {
	if id == clientv3.NoLease {
		return 0, -1, nil
	}
	r, err := c.client.TimeToLive(ctx, id)
	switch {
	case isLeaseNotFound(err):
		return 0, -1, nil
	case err != nil:
		return 0, 0, fmt.Errorf("lease %x: %w", int64(id), err)
	case r.TTL < 0: // -1: expired (remaining TTLs are rounded down: 0 is live)
		return 0, -1, nil
	}
	return time.Duration(r.GrantedTTL) * time.Second, time.Duration(r.TTL) * time.Second, nil
}
