package tenure

import "time"

// A ForeignRecord is what a coordinator holds on a key, and Acquire
// refuses to take over, that is not a grant as tenure writes one: a key
// written by another program or by hand (an etcd key without a lease, a
// lease longer than any TTL tenure grants), or one tenure cannot read as a
// grant (its holder or token is not one tenure writes). No tenure process
// renews it as a grant, and it may never expire (an etcd key put on a live
// lease lives as long as that lease's owner renews the lease): it holds the
// key until an operator removes it
// ("tenure release --force"). The etcd, PostgreSQL and Kubernetes
// coordinators list such records with ListForeign and remove one with
// RemoveForeign, for status displays and operators' tools.
type ForeignRecord struct {
	// Key is the key the record holds, or, for a membership record, the
	// key of its group.
	Key string
	// Member is set when the record is a membership record of group Key
	// (not a grant of Key), that no member wrote as it stands: it names
	// the member as the record does. Such a record is no member: no
	// partition is assigned to it. The partitions it owns, if any, are
	// records of their own keys; on PostgreSQL and Kubernetes, removing
	// the membership record frees them too.
	Member string
	// Holder is the holder as the record names it, which need not be a
	// valid holder identity ("" when it names none).
	Holder string
	// Token identifies the record as it is now, and is what RemoveForeign
	// compares: the key's mod revision on etcd, the row's fencing_token on
	// PostgreSQL, the Lease's resourceVersion on Kubernetes (for a
	// membership record: the membership key's mod revision, the membership
	// row's epoch, the membership Lease's resourceVersion).
	Token uint64
	// TTL is the time left before the coordinator counts the record
	// expired, on its own clock; negative when it never expires.
	TTL time.Duration
	// Malformed is true when tenure cannot read the record as a grant (no
	// holder, a holder that is not a holder identity, a token tenure never
	// grants), false when it reads as one that tenure never writes (no
	// lease, a lease longer than a day).
	Malformed bool
	// Reason says what makes the record foreign or malformed, in a few
	// words: "no lease".
	Reason string
}
