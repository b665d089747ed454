package postgres_test

import "testing"

// TestAcquirePartitionRaceFreshRowsDeleted is
// TestAcquirePartitionRaceFreshCoordinators (a new Coordinator for each
// single-key Acquire, so the one-statement acquisition of a row a
// single-key grant wrote last runs) with an admin that deletes, in turn,
// the key's leadership row, the group's partition rows and its membership
// rows by hand: no two checked holds of the key overlap and their tokens
// increase, whichever row the grants and claims lost meanwhile.
func TestAcquirePartitionRaceFreshRowsDeleted(t *testing.T) {
	t.Parallel()
	raceAcquirePartition(t, true,
		`DELETE FROM public.cluster_leadership WHERE resource = 'g/0'`,
		`DELETE FROM public.cluster_leadership_partitions WHERE grp = 'g'`,
		`DELETE FROM public.cluster_leadership_members WHERE grp = 'g'`)
}

// TestAcquirePartitionRaceFreshTablesDropped is the same race with an admin
// that drops both group tables (members re-create them when they join, so
// group tables appear mid-flight to Coordinators that saw none or saw the
// old ones) and truncates the leadership table.
func TestAcquirePartitionRaceFreshTablesDropped(t *testing.T) {
	t.Parallel()
	raceAcquirePartition(t, true,
		`DROP TABLE IF EXISTS public.cluster_leadership_members, public.cluster_leadership_partitions`,
		`TRUNCATE public.cluster_leadership`,
		`DELETE FROM public.cluster_leadership_partitions WHERE grp = 'g'`)
}
