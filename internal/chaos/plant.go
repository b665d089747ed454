package chaos

import (
	"fmt"

	"github.com/tenure-dev/tenure/internal/plant"
)

// Plants are the known bugs a node can be built with, to prove that the
// checkers catch them.
const (
	// PlantNone: the node as shipped.
	PlantNone = ""
	// PlantNoToken: the node presents no fencing token; it writes through the
	// register's unfenced path, so nothing stops a stale write. Caught by the
	// stale-write and linearizability checkers (pauses with a write in
	// flight).
	PlantNoToken = plant.NoToken
	// PlantReplyDeadline: the local deadline is measured from the reply
	// instead of the send: the reported TTL grows by the round trip. Caught
	// by the lease-overrun checker (degrade: slow replies, then a partition).
	PlantReplyDeadline = plant.ReplyDeadline
	// PlantNoMargin: no safety margin and no drift allowance: the reported
	// TTL is inflated so that TTL'·(1−MaxDrift) − Margin = TTL. Caught by the
	// lease-overrun checker (degrade: a slow write checked just before the
	// deadline lands after the lease).
	PlantNoMargin = plant.NoMargin
	// PlantRenewAfterExpiry: renewal allowed after expiry: a renewal that
	// fails or reports the grant lost is reported renewed (re-acquiring
	// quietly when the key is free), so the old term carries on. Caught by
	// the overlap and lease-overrun checkers (partitions of the leader).
	PlantRenewAfterExpiry = plant.RenewAfterExpiry
)

// Plants lists every planted bug.
func Plants() []string { return plant.All() }

// CheckPlant returns an error naming p if it is not a known plant.
func CheckPlant(p string) error {
	if p == PlantNone {
		return nil
	}
	for _, q := range Plants() {
		if p == q {
			return nil
		}
	}
	return fmt.Errorf("chaos: unknown planted bug %q (want one of %v)", p, Plants())
}

// PlantFamilies returns the fault families that expose planted bug p, the
// ones tenure verify draws when --plant is given without --faults:
//
//   - no-token: pauses with a write in flight (the write lands after a
//     newer leader wrote, and nothing rejects it);
//   - reply-deadline and no-margin: degrade (slow renewals, slow writes,
//     then a partition: the leader writes up to its local deadline, which
//     the bug has put after the lease);
//   - renew-after-expiry: partitions of the leader (its renewals fail and
//     it carries on past its lease).
//
// It returns nil for PlantNone.
func PlantFamilies(p string) []string {
	switch p {
	case PlantNoToken:
		return []string{FamilyPause}
	case PlantReplyDeadline, PlantNoMargin:
		return []string{FamilyDegrade}
	case PlantRenewAfterExpiry:
		return []string{FamilyPartition}
	}
	return nil
}
