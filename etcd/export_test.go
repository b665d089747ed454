package etcd

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// WaitLineReady waits (at most 10s) until c follows the line of candidates,
// which it starts doing in the background after its first grant, and
// reports whether it does: tests that count a call's round trips wait for
// it first, so that the follower's one read and watch are not counted.
func WaitLineReady(c *Coordinator) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c.line.mu.Lock()
		ready := c.line.ready
		c.line.mu.Unlock()
		if ready {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// LineFirst returns the candidate that has waited longest for key, as c
// sees the line.
func LineFirst(c *Coordinator, key string) (holder string, ok bool) {
	e, ok := c.line.first(key, "")
	return e.holder, ok
}

// LeftInLine records, as a failed leave would, that a line entry of holder
// for key on lease id may be left in etcd, and returns its etcd key.
func LeftInLine(c *Coordinator, key, holder string, id int64) string {
	c.mu.Lock()
	c.seq++
	w := &wait{key: key, holder: holder, lease: clientv3.LeaseID(id), entry: c.lineKey(key, clientv3.LeaseID(id), c.seq)}
	c.mine[entryOf{key, w.lease}] = true
	c.mu.Unlock()
	c.leftWait(w)
	return w.entry
}

// LineLen returns how many candidates c sees waiting for key.
func LineLen(c *Coordinator, key string) int {
	c.line.mu.Lock()
	defer c.line.mu.Unlock()
	return len(c.line.byKey[key])
}
