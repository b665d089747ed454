package chaos

import (
	"fmt"
	"slices"

	"github.com/tenure-dev/tenure/internal/plant"
)

// Plants lists every planted bug a node can be built with (package plant
// names them), to prove that the checkers catch them.
func Plants() []string { return plant.All() }

// checkPlant returns an error naming p if it is not a known plant.
func checkPlant(p string) error {
	if p == plant.None || slices.Contains(Plants(), p) {
		return nil
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
//     it carries on past its lease);
//   - slow-clock and wall-clock: clock faults (the leader is cut off while
//     its clock is off: the slow clock, or the wall clock that jumped ahead,
//     puts its local deadline after its lease).
//
// It returns nil for plant.None.
func PlantFamilies(p string) []string {
	switch p {
	case plant.SlowClock, plant.WallClock:
		return []string{FamilyClock}
	case plant.NoToken:
		return []string{FamilyPause}
	case plant.ReplyDeadline, plant.NoMargin:
		return []string{FamilyDegrade}
	case plant.RenewAfterExpiry:
		return []string{FamilyPartition}
	}
	return nil
}
