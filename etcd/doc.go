// Package etcd is a tenure.Coordinator on etcd v3 (any etcd 3.4 or newer,
// external or embedded), with a fence guard that makes etcd writes conditional
// on a live grant.
//
// # Layout
//
// A tenure key K lives at the etcd key Prefix+K (Prefix defaults to
// DefaultPrefix, "/tenure/leader/"; change it with WithPrefix). Its value is
// the holder's identity, as is, and it is attached to an etcd lease of its
// own. Nothing else is stored:
//
//	/tenure/leader/scheduler  →  "node-a-4242-1f2e3d4c#3f9c2a1b"   (lease 694d7a1b2c3d4e5f)
//
// The fencing token is the key's mod revision, the revision of the put that
// granted it: etcd's revision counter only grows and survives restarts, and
// every grant is a new put of an absent key, so every grant of a key has a
// token greater than every grant before it.
//
// # The token path
//
// Acquire, Renew and Release (grant.go) are the whole of it, in the manner
// of etcd's own concurrency.Election. Acquire puts the key if it does not
// exist, on a lease of its own, in one transaction; Renew extends that lease
// with one KeepAliveOnce, then reads the key to check that it is still the
// grant (a key deleted by hand leaves its lease alive); Release deletes the
// key if it is still the grant, and a follower watching the key acquires it
// on the delete event. A lease may be granted ahead, by the holder's last
// Acquire that found the key held or kept by its last Release: it carries no
// key and nothing extends it, so it is just a lease that started earlier, and
// the grant's Sent, when it was granted or last extended, counts its whole age.
// Once the key is on its lease, a new one or such a lease, Acquire looks the
// lease up: one that another process granted again under its ID, for
// another TTL, or put a key on, while it carried nothing, is left, and the
// key put on a new lease.
//
// One lease carries at most one grant at a time, and only that grant's own
// Acquire and Renew extend it, so nothing else can keep a key alive: a
// holder that stops renewing loses its key when the TTL passes, and renewing
// one grant never extends another. A partition member's keys are the one
// exception, by design: they all ride on the member's membership lease
// (JoinGroup), renewed by RenewMember.
//
// etcd leases are whole seconds with a minimum of 1.5 election timeouts
// (2s with etcd's default settings, 1s on a one-member embedded server): a
// requested TTL is rounded up to whole seconds and etcd may raise it
// further. Grants report the TTL etcd actually granted, as returned by
// LeaseGrant or the latest KeepAliveOnce, which etcd counts from when it
// received the request, after Sent.
//
// # Refusals
//
// An error of any call that etcd refused for good also matches
// tenure.ErrRefused, with etcd's own error (an rpctypes.EtcdError) still
// beneath it: a role without the permission ("etcdserver: permission
// denied"), a password refused, no user name where etcd requires one. An
// Elector and a partition group stop on it instead of retrying. Timeouts,
// a lost leader and an expired auth token (the client authenticates
// again) do not match it.
//
// # Fencing
//
// FencedTxn commits a transaction only while a grant is live, by comparing
// the election key's mod revision with the grant's token in the same
// transaction; Register keeps the highest token accepted so far in an etcd
// key, for resources in etcd written by successive leaders. Both reject with
// a *fence.StaleError, which matches tenure.ErrStaleToken.
package etcd
