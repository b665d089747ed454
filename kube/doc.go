// Package kube is a tenure.Coordinator on Kubernetes: one
// coordination.k8s.io/v1 Lease per key, in one namespace, through
// client-go. It needs an API server whose resourceVersions are comparable
// (Kubernetes 1.35 or newer, KEP-5504), and the verbs get, list, watch,
// create and update on leases in that namespace.
//
// # Layout
//
// A key that is a valid Lease name ("my-controller") is its own Lease's
// name; any other key ("orders/17") gets a name made from it and a hash,
// and the Lease carries the key in the tenure.dev/key annotation (see
// LeaseName). A key spelled as such a name ("jobs-1-" and 16 hex digits)
// is refused with tenure.ErrInvalidKey, so that no two keys share a Lease.
// tenure writes the fields client-go's leaderelection writes, with the
// same meaning, so `kubectl get lease` shows tenure's holders and
// the two can share a Lease:
//
//	spec.holderIdentity        the holder ("web-1#3f9c2a1b"); "" when released
//	spec.leaseDurationSeconds  the TTL, rounded up to whole seconds
//	spec.acquireTime           when the grant was made (wall clock, for people)
//	spec.renewTime             when it was last renewed (wall clock, for people)
//	spec.leaseTransitions      one more at every grant (see below)
//
// # Tokens
//
// Every grant is an update of the Lease preconditioned on the
// resourceVersion it replaces (a key's Lease that does not exist is first
// created empty, with no holder); the grant's fencing token is one more
// than that resourceVersion. resourceVersions of one resource are ordered
// integers since Kubernetes 1.35 (compared here with
// resourceversion.CompareResourceVersion); on etcd they are etcd
// revisions, which only grow and survive restarts, also across a delete
// and re-create of the Lease. So the granting write's own resourceVersion
// is at least the token, and every grant of a key has a token greater than
// every grant before it, each at most the resourceVersion of its own
// write; a resourceVersion is replaced by one write at most, so no token
// repeats. A server whose resourceVersions are not comparable integers is
// refused with ErrIncomparable.
//
// The token is known before the write, so the granting write itself
// carries it in the tenure.dev/token annotation, bound to the holder and
// acquireTime it writes; renewals keep it. A write that tenure did not
// make (a label, another annotation, client-go keeping the annotations
// it found) changes no token: only one that changes the holder, the
// acquireTime or the annotation does, and the grant's holder is then told
// it lost. A Lease whose holder has no bound annotation (client-go's)
// reads with its own resourceVersion as token: it names the holder, and
// changes at every write.
//
// # Expiry without a server clock
//
// The API server never expires a Lease: renewTime is a wall-clock reading
// of whoever wrote it, which no contender can trust. As in client-go, a
// contender decides on its own clock. It remembers, for each Lease, the
// newest resourceVersion it has seen and when it first saw it: the time
// read (tenure.Now, Go's monotonic clock and the boot clock) after the
// reply or watch event that carried it arrived. It may take a held Lease
// only with a write preconditioned on a resourceVersion that it has seen
// unchanged for leaseDurationSeconds·(1 + MaxDrift) since then (the drift
// allowance). A contender that has never seen the Lease, a new process or
// one that restarted, has nothing remembered: it waits the whole duration
// from its first read, whatever renewTime says.
//
// Why the holder's deadline comes first. Let the holder H's last write
// that succeeded be W, sent at s (H read tenure.Now just before sending it:
// the grant's Sent), applied by the API server as resourceVersion v, with
// duration L. H's local deadline is s + L·(1 − d) − margin on H's clock
// (d is tenure.Config.MaxDrift). Let a contender C take the
// Lease with a write X.
//
//  1. X is preconditioned on a resourceVersion, and every write changes
//     it; if any write followed W, an X preconditioned on v fails with a
//     conflict. So X is preconditioned on v and no write came between.
//  2. C first saw v at o, after a reply or event that carried v arrived.
//     The server produced that reply after it applied W, and W was sent
//     after s: so s ≤ o in real time.
//  3. C sent X only after its clock had advanced L·(1 + d) since o, and
//     X took effect after it was sent.
//  4. Assumption: over any interval, H's clock advances at least (1 − d)
//     times as much as C's (their rates differ by at most the drift
//     allowance). Between s and X, C's clock advanced at least L·(1 + d)
//     (step 3, and s ≤ o), so H's advanced at least L·(1 − d²), which is
//     more than L·(1 − d) − margin.
//  5. So H's deadline passed before X took effect: H stopped acting before
//     C could begin. Renewals whose replies H never saw do not extend H's
//     deadline, so they only make it earlier than the argument needs.
//
// A tenure holder already subtracts the drift from its own deadline; the
// contender's allowance is for holders that do not, such as client-go's,
// which stop at their RenewDeadline after the last renewal they saw. A
// process pause (GC, SIGSTOP) can still carry a holder past its deadline
// with a write in flight; no lease prevents that, which is why resources
// check tokens.
//
// client-go's contenders compare the record (the spec fields above, with
// times in whole seconds), not the resourceVersion: a renewal whose
// renewTime fell in the same second as the one before it would change
// nothing they see, and their wait would count from the earlier write,
// before the holder's Sent. So every write changes that record, and no
// record ever comes back: an acquiring write increments leaseTransitions,
// and so does a renewal in the same second as the write before it (with
// renewals every TTL/3, that happens only for TTLs under about three
// seconds); a renewal in a later second changes renewTime's second.
//
// # Releases
//
// Release clears the holder, as client-go's ReleaseOnCancel does, and sets
// the tenure.dev/released annotation: the released grant's token and
// holder, bound to the renewTime of that write. A contender takes such a
// Lease at once. A Lease cleared without that mark bound to the clearing
// write is not taken for a release: client-go's release checks its own,
// possibly stale, record of who leads and may clear a grant it no longer
// holds (it keeps the annotations it read, and writes its own times, so a
// copied mark does not bind). Such a clear is a change like any other: a
// contender waits (L·(1 + MaxDrift)) from its first sighting, where L is
// the longer of the duration of the grant it saw before the clear and the
// TTL it asks for, so that the holder whose grant was cleared, which
// learns of it at its next renewal, stops first. A Lease that bears no
// trace of a holder (no holder, times, duration or transitions, no token
// or release mark), as Acquire and ClaimPartitions create one before they
// grant it, is free at once, as a Lease that does not exist is.
//
// # Refusals
//
// An error the API server refused for good also matches tenure.ErrRefused,
// with its StatusError still beneath: RBAC forbids the verb (403
// Forbidden, as for a user who may get, list and watch Leases but not
// create or update them) or the credentials are not accepted (401
// Unauthorized). An Elector and a partition group stop on it instead of
// retrying. Acquire only reads a Lease another holder keeps alive, so a
// user who may read but not write is refused when the key is next free.
// Timeouts, 5xx answers, conflicts and throttling (429) do not match it.
//
// # Watches
//
// Watch watches the one Lease (a field selector on its name), so a
// follower hears of a release within one event of the write, and
// evaluates expiry on a timer by the rule above. A watch that sees a
// tenure release writes at once, preconditioned on the version the event
// carried: a handover is the release, its event and one write.
//
// # Partition groups
//
// Coordinator is a partition.Coordinator (package partition). Each member
// holds a membership Lease of its own (named "tm-" with a hash of the group
// and a random epoch, labelled with the group's hash): RenewMember updates
// that one Lease, one write however many partitions the member owns. Each
// partition has a Lease named as its key (LeaseName), written only when its
// ownership changes: its holder is the member's ID and its
// tenure.dev/member annotation names the membership Lease, so it lives
// exactly as long as that Lease; its token is formed and written as a
// key's, by the claiming write. A membership expires by the rule above, on the claimer's
// clock. Before it takes a partition whose owner's membership expired, a
// claimer deletes that membership Lease, preconditioned on the
// resourceVersion it saw expire: a renewal since makes the delete fail and
// the owner lives; after the delete the owner can never renew, even through
// a coordinator that never saw it expire. Claims, releases and checks of
// several partitions are a request each (the API server writes and reads
// named objects one at a time), at most 32 at once; GroupMembers and
// GroupPartitions list the group's Leases in one request.
//
// What a Lease is, a membership, a partition's or a key's, follows from its
// name and annotations alone: a membership Lease is named as one of its
// group, and a partition's names its owner's membership Lease in
// tenure.dev/member. The labels tenure writes (tenure.dev/group,
// tenure.dev/role, app.kubernetes.io/managed-by) are for people's
// selectors and to keep a group's list short; a label removed or changed
// by hand changes nothing tenure decides. A Lease whose label was edited is
// missing from its group's list until its member's next write labels it
// again (a renewal, a check of its partitions), so a claim reads a
// partition's owner missing from the list by name, and decides on a list
// of every Lease of the namespace when it reads as gone.
//
// A claim or check is decided by a write, never by a read alone: a
// partition already the member's is confirmed by an update preconditioned
// on the version read, which writes nothing when the token annotation is
// there (the API server does not write an unchanged object) and fails if
// the Lease changed; a new owner's write and the delete of an expired
// membership are preconditioned likewise. A read out of date (a cache
// behind the server) costs a retry, never a second owner or an older
// token. A partition's Lease is refused to Acquire, and no key names a
// membership Lease.
package kube
