// Package etcd is a tenure.Coordinator on etcd v3 (any etcd 3.4 or newer,
// external or embedded), with a fence guard that makes etcd writes conditional
// on a live grant.
//
// # Layout
//
// A tenure key K lives at the etcd key Prefix+K (Prefix defaults to
// DefaultPrefix, "/tenure/leader/"; change it with WithPrefix). Its value is
// the holder's identity, as is, and it is attached to the holder's etcd
// lease. Besides the line entries of waiting candidates (see Hand-off on
// release), nothing else is stored:
//
//	/tenure/leader/scheduler  →  "node-a-4242-1f2e3d4c"   (lease 694d7a1b2c3d4e5f)
//
// The fencing token is the key's mod revision, the revision of the write
// that granted it: etcd's revision counter only grows and survives restarts,
// and every grant is a write of the key (a put of a free key, or a release
// that hands the key over), so every grant of a key has a token greater than
// every grant before it.
//
// # Hand-off on release
//
// An Elector that finds its key held waits in line for it
// (WatchAsCandidate): a line entry, outside the prefix, holds its identity
// on its lease, which it keeps alive while it waits:
//
//	"\x00tenure-line\x00/tenure/leader/scheduler\x00694d7a1b2c3d4e5f"  →  "node-b-…"
//
// Every coordinator that has granted a key follows the line with one watch.
// Its Release hands the key to the candidate that has waited longest in one
// transaction: if the grant is live and the entry still exists, put the key
// with the candidate's identity on the candidate's lease and delete the
// entry. The candidate's watch sees the put, and its Acquire returns the
// grant without a round trip, so a graceful handover costs one write and one
// watch notification. A candidate that stops waiting (or whose watch fails)
// deletes its entry and releases a key handed to it meanwhile; if that
// fails, it is retried before each later renewal of the holder's leases, so
// an entry left behind never makes a live holder keep a key it does not
// want. Without a candidate, or when the entry has gone, Release deletes the
// key as before.
//
// # Leases
//
// All keys one holder holds with the same TTL share one etcd lease, however
// many there are, so renewing them costs the same two round trips as renewing
// one: a KeepAliveOnce on the shared lease, then a single transaction that
// checks that every key still exists with its token. There is no background
// keepalive of a held key: leases are extended by Acquire and Renew, and by
// a candidate waiting in line, so a holder that stops renewing and waiting
// loses its keys when the TTL passes. Because the
// lease is shared, renewing one grant also extends the holder's other grants
// with the same TTL; Release deletes only its own key. When the shared lease
// expires, the next Acquire grants a new one.
//
// etcd leases are whole seconds with a minimum of 1.5 election timeouts
// (2s with etcd's default settings, 1s on a one-member embedded server): a
// requested TTL is rounded up to whole seconds and etcd may raise it
// further. Grants report the TTL etcd actually granted, as returned by
// LeaseGrant or the latest KeepAliveOnce, which etcd counts from when it
// received the request, after the caller sent it: a holder's local deadline
// computed from the reported TTL never outlives the lease.
//
// # Fencing
//
// FencedTxn commits a transaction only while a grant is live, by comparing
// the election key's mod revision with the grant's token in the same
// transaction; Register keeps the highest token accepted so far in an etcd
// key, for resources in etcd written by successive leaders. Both reject with
// a *fence.StaleError, which matches tenure.ErrStaleToken.
package etcd
