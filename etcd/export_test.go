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

// LeftInLine records, as a failed leave would, that holder's line entry for
// key on lease id may be left in etcd.
func LeftInLine(c *Coordinator, key, holder string, id int64) {
	c.leftInLine(key, holder, clientv3.LeaseID(id))
}

// LineKey is the etcd key of holder's line entry for key on lease id.
func LineKey(c *Coordinator, key string, id int64) string {
	return c.lineKey(key, clientv3.LeaseID(id))
}

// SetClearLeftoversHook makes f run between the reading of the leftovers
// and their clearing, until the test ends.
func SetClearLeftoversHook(t interface{ Cleanup(func()) }, f func()) {
	clearLeftoversHook = f
	t.Cleanup(func() { clearLeftoversHook = nil })
}
