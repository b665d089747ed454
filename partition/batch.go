package partition

import "time"

// Claims go in batches of minClaim to maxClaim partitions, sized by how
// fast the coordinator answers them (see claimBatch).
const (
	minClaim = 32
	maxClaim = 1024
)

// claimBatch is how many partitions a member claims in one step. It starts
// at 128, halves when a claim took longer than its target (half a
// RetryPeriod) or failed, and doubles when a full batch took less than half
// that, within [minClaim, maxClaim].
//
// Why: a coordinator serves claims and renewals from one queue (a member's
// renewal goes with CheckPartitions, on etcd a TimeToLive of its lease,
// which etcd answers only once it has applied every write committed
// before, as it does a linearizable read), so the claims that members have
// in flight are a wait for every renewal.
// With every member claiming 1,024 at a time, a cold start of 100,000
// partitions kept etcd's queue seconds deep for as long as it lasted, and
// on a loaded host renewals came too late: memberships expired and their
// partitions were claimed all over again. Claims sized to answer in half a
// RetryPeriod keep the coordinator just as busy (members claim again at
// once) with a wait of that order.
type claimBatch struct{ size int }

// next is the size of the next claim.
func (b *claimBatch) next() int {
	if b.size == 0 {
		b.size = 128
	}
	return b.size
}

// took adjusts the size after a claim of n partitions that took d, and
// failed or not, against target.
func (b *claimBatch) took(n int, d, target time.Duration, failed bool) {
	switch {
	case failed || d > target:
		b.size = max(b.next()/2, minClaim)
	case d < target/2 && n >= b.next():
		b.size = min(b.next()*2, maxClaim)
	}
}
