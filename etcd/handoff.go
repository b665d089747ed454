package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// Hand-off on release.
//
// A campaigning Elector watches its key through WatchAsCandidate, which
// puts a line entry for it: an etcd key outside the tenure prefix, named by
// the tenure key and the candidate's shared lease, holding the candidate's
// holder string, on that lease (so that it goes when the candidate's
// process does). Every coordinator that has granted a key follows the line
// entries with one watch (line). Its Release of a grant hands the key to
// the entry that has waited longest, in one transaction: if the grant is
// still live and the entry still exists, put the key with the candidate's
// holder on the candidate's lease, and delete the entry. The key keeps its
// CreateRevision; its ModRevision, the new token, is the transaction's
// revision, greater than every token before it.
//
// The candidate's coordinator sees the put on its watch of the key (seen)
// and its next Acquire returns the grant without a round trip: the key is on
// its own lease, whose time left it knows from its own keepalives, it was
// rewritten in place (only a hand-off does that), and no caller has been
// given, renewed or released that token here (given). When its watch ends
// without such an Acquire, it deletes its entry and releases a key handed to
// it; if that fails, the entry is recorded (leftovers) and cleared before
// the holder's next renewal or keepalive.
// Waiting in line is a speed-up only: any failure falls back to a plain
// release and a contender's own Acquire.

// linePrefix is where every line entry of this coordinator's prefix lives:
// "\x00" cannot appear in a tenure key or prefix, so no range of tenure keys
// sees them.
func (c *Coordinator) linePrefix() string { return "\x00tenure-line\x00" + c.prefix }

// lineKey names the line entry of one wait of a candidate for key on lease
// id: unique to this coordinator (nonce) and to the wait (seq), so that no
// two waits, of this coordinator or of another sharing the lease, ever
// write, clear or claim through the same entry.
func (c *Coordinator) lineKey(key string, id clientv3.LeaseID, seq uint64) string {
	return fmt.Sprintf("%s%s\x00%016x.%s.%d", c.linePrefix(), key, int64(id), c.nonce, seq)
}

// lineEntry is one candidate waiting for key.
type lineEntry struct {
	key, entry string // the tenure key, and the line entry's etcd key
	holder     string
	lease      clientv3.LeaseID
	created    int64 // the entry's CreateRevision: its place in line
}

// line is a coordinator's view of every line entry under its prefix, kept
// by one watch from the coordinator's first grant until it closes.
type line struct {
	mu      sync.Mutex
	started bool
	ready   bool                            // the view is current (the watch runs)
	byKey   map[string]map[string]lineEntry // tenure key → entry key → entry
}

// followLine starts following the line, once.
func (c *Coordinator) followLine() {
	c.line.mu.Lock()
	if c.line.started {
		c.line.mu.Unlock()
		return
	}
	c.line.started = true
	c.line.mu.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		for c.ctx.Err() == nil {
			c.watchLine()
			select {
			case <-c.ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
}

// watchLine reads the line and applies its changes until the watch fails.
func (c *Coordinator) watchLine() {
	base := c.linePrefix()
	resp, err := c.client.Get(c.ctx, base, clientv3.WithPrefix())
	if err != nil {
		return
	}
	c.line.mu.Lock()
	c.line.byKey = make(map[string]map[string]lineEntry)
	for _, kv := range resp.Kvs {
		c.line.put(base, kv)
	}
	c.line.ready = true
	c.line.mu.Unlock()
	defer func() {
		c.line.mu.Lock()
		c.line.ready = false
		c.line.mu.Unlock()
	}()
	wch := c.client.Watch(clientv3.WithRequireLeader(c.ctx), base, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	for wr := range wch {
		if wr.Canceled || wr.Err() != nil {
			return
		}
		c.line.mu.Lock()
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.DELETE {
				c.line.remove(base, string(ev.Kv.Key))
			} else {
				c.line.put(base, ev.Kv)
			}
		}
		c.line.mu.Unlock()
	}
}

// splitLineKey returns the tenure key of a line entry's etcd key.
func splitLineKey(base, entry string) (string, bool) {
	rest, ok := strings.CutPrefix(entry, base)
	i := strings.LastIndexByte(rest, 0)
	if !ok || i < 0 {
		return "", false
	}
	return rest[:i], true
}

// put records kv, a line entry. l.mu is held.
func (l *line) put(base string, kv *mvccpb.KeyValue) {
	key, ok := splitLineKey(base, string(kv.Key))
	if !ok {
		return
	}
	m := l.byKey[key]
	if m == nil {
		m = make(map[string]lineEntry)
		l.byKey[key] = m
	}
	m[string(kv.Key)] = lineEntry{key: key, entry: string(kv.Key), holder: string(kv.Value),
		lease: clientv3.LeaseID(kv.Lease), created: kv.CreateRevision}
}

// remove forgets the line entry entry. l.mu is held.
func (l *line) remove(base, entry string) {
	key, ok := splitLineKey(base, entry)
	if !ok {
		return
	}
	delete(l.byKey[key], entry)
	if len(l.byKey[key]) == 0 {
		delete(l.byKey, key)
	}
}

// first returns the candidate other than holder that has waited longest for
// key, if the view is current and anyone waits.
func (l *line) first(key, holder string) (lineEntry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var best lineEntry
	found := false
	if !l.ready {
		return best, false
	}
	for _, e := range l.byKey[key] {
		if e.holder == holder {
			continue
		}
		if !found || e.created < best.created {
			best, found = e, true
		}
	}
	return best, found
}

// forget drops e from the view (its lease is gone).
func (l *line) forget(e lineEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.byKey[e.key]; m != nil && m[e.entry].created == e.created {
		delete(m, e.entry)
	}
}

// handOff gives g's key to candidate e in one transaction, if g is still
// the live grant and e still waits. It reports whether it did.
func (c *Coordinator) handOff(ctx context.Context, g tenure.Grant, e lineEntry) (bool, error) {
	ek := c.EtcdKey(g.Key)
	resp, err := c.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(ek), "=", int64(g.Token)),
			clientv3.Compare(clientv3.Value(ek), "=", g.Holder),
			clientv3.Compare(clientv3.CreateRevision(e.entry), "=", e.created)).
		Then(clientv3.OpPut(ek, e.holder, clientv3.WithLease(e.lease)), clientv3.OpDelete(e.entry)).
		Commit()
	if err != nil {
		return false, err
	}
	if resp.Succeeded {
		c.log.Debug("leadership handed over", "key", g.Key, "from", g.Holder, "to", e.holder, "token", resp.Header.Revision)
	}
	return resp.Succeeded, nil
}

// seenKey is the latest state of a key seen by this coordinator's watches:
// held (kv) or free (kv nil) at revision rev.
type seenKey struct {
	rev int64
	kv  *mvccpb.KeyValue
}

// observe records the state of key at revision rev, unless a later one is
// recorded.
func (c *Coordinator) observe(key string, rev int64, kv *mvccpb.KeyValue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.seen[key]; !ok || rev >= s.rev {
		c.seen[key] = seenKey{rev, kv}
	}
}

// granted records that token was returned for key to a caller of this
// coordinator: it is never handed out again.
func (c *Coordinator) granted(key string, token uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.given[key] = max(c.given[key], int64(token))
}

// claim returns the grant kv shows on key for holder, when a release handed
// the key to holder on lease id (the key was rewritten in place: its
// CreateRevision is below its ModRevision) and no caller of this
// coordinator has been given its token, and marks its token given. left is
// the time the lease has left for sure. A key holder put itself is never
// claimed (two Acquires of one holder in flight at once would both see it),
// nor one handed to a line entry this coordinator did not put.
func (c *Coordinator) claim(key, holder string, kv *mvccpb.KeyValue, id clientv3.LeaseID, left time.Duration) (tenure.Grant, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if kv == nil || string(kv.Value) != holder || clientv3.LeaseID(kv.Lease) != id || id == clientv3.NoLease ||
		kv.CreateRevision >= kv.ModRevision || kv.ModRevision <= c.given[key] || left <= 0 {
		return tenure.Grant{}, false
	}
	// Only a coordinator that put a line entry for key on this lease takes
	// the key: another that shares the lease (it renewed one of the
	// holder's grants, adopting the lease) may not know who was given the
	// token, and never waits in line on an adopted lease (enterLine).
	if !c.mine[entryOf{key, id}] {
		return tenure.Grant{}, false
	}
	c.given[key] = kv.ModRevision
	return tenure.Grant{Key: key, Holder: holder, Token: uint64(kv.ModRevision), TTL: left.Truncate(time.Millisecond)}, true
}

// claimSeen is claim on the state this coordinator's watches last saw of
// key, without a round trip, when the shared lease sl has at least half its
// TTL left (counted from start).
func (c *Coordinator) claimSeen(key, holder string, sl *sharedLease, start boottime.Instant) (tenure.Grant, bool) {
	id, ttl, sent := sl.snapshot()
	left := ttl - max(start.Sub(sent), 0)
	if id == clientv3.NoLease || left < ttl/2 {
		return tenure.Grant{}, false
	}
	c.mu.Lock()
	s := c.seen[key]
	c.mu.Unlock()
	return c.claim(key, holder, s.kv, id, left)
}

// WatchAsCandidate is Watch, and while ctx and the watch last it also puts
// holder in line for key on holder's shared lease for ttl, and keeps that
// lease at two thirds of its TTL or more. See tenure.Candidate. When ctx
// ends, the watch fails or the coordinator closes, the entry is deleted,
// and a key handed to holder that no Acquire took is released (retried
// before the holder's next renewal if that fails). A failure to stand in line is logged
// at debug level: the watch works as Watch's does.
func (c *Coordinator) WatchAsCandidate(ctx context.Context, key, holder string, ttl time.Duration) (<-chan tenure.LeaderEvent, error) {
	op := fmt.Sprintf("etcd: watch %q as candidate %q", key, holder)
	if err := tenure.ValidateHolder(holder); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := tenure.ValidateTTL(ttl); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	// Wait in line as long as the watch lasts: a candidate whose watch
	// failed polls, and would take a key handed to it late.
	wctx, cancel := context.WithCancel(ctx)
	ch, err := c.watch(ctx, key, cancel)
	if err != nil {
		cancel()
		return nil, err
	}
	c.followLine() // a candidate is about to lead, and hand the key on
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cancel()
		return ch, nil
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer cancel()
		stop := context.AfterFunc(c.ctx, cancel)
		defer stop()
		c.waitInLine(wctx, key, holder, c.sharedLease(holder, ttlSeconds(ttl)))
	}()
	return ch, nil
}

// waitInLine stands in line for key until ctx ends, then leaves it.
func (c *Coordinator) waitInLine(ctx context.Context, key, holder string, sl *sharedLease) {
	var w *wait // nil while not in line
	defer func() {
		if w != nil {
			c.leaveLine(w)
		}
	}()
	for ctx.Err() == nil {
		if w == nil {
			var err error
			if w, err = c.enterLine(ctx, key, holder, sl); err != nil {
				c.log.Debug("cannot wait in line; campaigning without", "key", key, "holder", holder, "err", err)
				return
			}
		}
		// Keep the lease at two thirds of its TTL or more while waiting, so
		// that a key handed over is taken without a keepalive (Acquire
		// takes it without one while half is left).
		cur, ttl, sent := sl.snapshot()
		if cur != w.lease {
			// The lease expired and another call replaced it: the entry
			// went with it.
			c.forgetWait(w)
			w = nil
			continue
		}
		if d := ttl - boottime.Since(sent) - 2*ttl/3; d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
			continue
		}
		// Extend it as a renewal would: release what failed to release
		// before, then keep alive.
		c.releaseOrphans(ctx, []tenure.Grant{{Holder: holder}})
		sent = boottime.Now()
		r, err := c.client.KeepAliveOnce(ctx, w.lease)
		switch {
		case isLeaseNotFound(err):
			// The entry went with the lease: stand in line again on a new one.
			sl.drop(w.lease)
			c.forgetWait(w)
			w = nil
		case err == nil:
			sl.extended(w.lease, sent, time.Duration(r.TTL)*time.Second)
		default:
			select { // etcd unreachable: try again shortly
			case <-ctx.Done():
			case <-time.After(max(ttl/30, 100*time.Millisecond)):
			}
		}
	}
}

// entryOf names the line entries of this coordinator for one key on one
// lease.
type entryOf struct {
	key   string
	lease clientv3.LeaseID
}

// A wait is one line entry this coordinator put (or may have put).
type wait struct {
	key, holder string
	lease       clientv3.LeaseID
	entry       string
	created     int64 // 0 when the write's outcome is unknown
}

// enterLine puts a line entry of holder for key on the shared lease,
// granting one if needed.
func (c *Coordinator) enterLine(ctx context.Context, key, holder string, sl *sharedLease) (*wait, error) {
	for range 3 {
		id, _, _, err := sl.get(ctx, c.client, boottime.Now())
		if err != nil {
			return nil, err
		}
		if sl.isAdopted(id) {
			// Another coordinator granted this lease and may wait in line
			// on it: a key handed to that lease must be taken by one
			// coordinator only (claim), the one whose lease it is.
			return nil, fmt.Errorf("lease %x was granted by another coordinator", int64(id))
		}
		c.mu.Lock()
		c.seq++
		w := &wait{key: key, holder: holder, lease: id, entry: c.lineKey(key, id, c.seq)}
		c.waits[w.entry] = w
		c.mine[entryOf{key, id}] = true
		c.mu.Unlock()
		resp, err := c.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(w.entry), "=", 0)).
			Then(clientv3.OpPut(w.entry, holder, clientv3.WithLease(id))).
			Commit()
		if isLeaseNotFound(err) {
			c.forgetWait(w)
			sl.drop(id)
			continue
		}
		if err != nil || !resp.Succeeded {
			// The entry may have been written: clear it later.
			c.leftWait(w)
			return nil, fmt.Errorf("put line entry: %v", err)
		}
		w.created = resp.Header.Revision
		return w, nil
	}
	return nil, fmt.Errorf("the shared lease of %q kept expiring", holder)
}

// leaveLineTimeout bounds leaving the line, which runs after its context
// has ended.
const leaveLineTimeout = 2 * time.Second

// leaveLine deletes the line entry of w. If a release handed the key to its
// holder meanwhile and no Acquire took it, the key is released. A leave
// that fails is retried before every later renewal and keepalive of the
// holder's leases (releaseOrphans): left on a shared lease that other
// grants keep alive, the entry would hand the key to a holder that no
// longer wants it.
func (c *Coordinator) leaveLine(w *wait) {
	ctx, cancel := context.WithTimeout(context.Background(), leaveLineTimeout)
	defer cancel()
	cmp := clientv3.Compare(clientv3.CreateRevision(w.entry), "=", w.created)
	if err := c.clearEntry(ctx, w, cmp); err != nil {
		c.log.Warn("leaving the line failed; retried with the holder's next renewal", "key", w.key, "holder", w.holder, "err", err)
		c.leftWait(w)
		return
	}
	c.forgetWait(w)
}

// clearEntry deletes the line entry of w when cmp holds, and releases the
// key if a release handed it to w's holder and no Acquire took it.
func (c *Coordinator) clearEntry(ctx context.Context, w *wait, cmp clientv3.Cmp) error {
	ek := c.EtcdKey(w.key)
	resp, err := c.client.Txn(ctx).If(cmp).Then(clientv3.OpDelete(w.entry), clientv3.OpGet(ek)).Else(clientv3.OpGet(ek)).Commit()
	if err != nil {
		return err
	}
	rs := resp.Responses[len(resp.Responses)-1].GetResponseRange()
	if g, ok := c.claim(w.key, w.holder, firstKV(rs.Kvs), w.lease, time.Nanosecond); ok {
		c.log.Debug("releasing a key handed over after its candidate stopped", "key", w.key, "token", g.Token)
		if err := c.deleteGrant(ctx, g); err != nil {
			c.orphan(g)
		}
	}
	return nil
}

// forgetWait forgets w: its entry is gone.
func (c *Coordinator) forgetWait(w *wait) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waits, w.entry)
	delete(c.leftovers, w.entry)
	c.recount(w.key, w.lease)
}

// leftWait records that w's entry may be left in etcd, to clear.
func (c *Coordinator) leftWait(w *wait) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waits, w.entry)
	c.leftovers[w.entry] = w
}

// recount keeps mine[{key, lease}] while any wait or leftover of this
// coordinator is on it. c.mu is held.
func (c *Coordinator) recount(key string, lease clientv3.LeaseID) {
	for _, w := range c.waits {
		if w.key == key && w.lease == lease {
			return
		}
	}
	for _, w := range c.leftovers {
		if w.key == key && w.lease == lease {
			return
		}
	}
	delete(c.mine, entryOf{key, lease})
}

// clearLeftovers deletes the line entries of holders that this coordinator
// may have left behind, and releases keys handed to them meanwhile. It runs
// before the holders' leases are extended (releaseOrphans), bounded on its
// own: a renewal must not spend its deadline here, and an entry not cleared
// now is cleared at the next renewal.
func (c *Coordinator) clearLeftovers(ctx context.Context, holders map[string]bool) {
	c.mu.Lock()
	var todo []*wait
	for _, w := range c.leftovers {
		if holders[w.holder] {
			todo = append(todo, w)
		}
	}
	c.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, leaveLineTimeout/4)
	defer cancel()
	for _, w := range todo {
		// The entry's name is unique to w: whatever holds at that name is w's.
		cmp := clientv3.Compare(clientv3.CreateRevision(w.entry), ">", 0)
		if err := c.clearEntry(ctx, w, cmp); err == nil {
			c.forgetWait(w)
		}
	}
}

// newNonce returns a random name for a coordinator's line entries.
func newNonce() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
