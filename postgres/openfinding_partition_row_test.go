//go:build openfinding

package postgres_test

import "testing"

// This file holds the reproduction of an open finding; it builds only with
// -tags openfinding, and fails until the finding is fixed:
//
//	go test -race -tags openfinding -run TestAcquirePartitionRaceRowDeleted ./postgres/
//
// A claim on a partition row an admin deleted draws its token from the
// clock alone, and no longer meets a concurrent single-key Acquire of the
// partition's key on that row: a later holder can get a smaller token, and
// the two can overlap for milliseconds (fenced: the smaller token's writes
// are refused). docs/safety.md says so for that removal.

// TestAcquirePartitionRaceRowDeleted is TestAcquirePartitionRace with an
// admin that also deletes the group's partition rows by hand (every third
// deletion; the rest are membership rows).
func TestAcquirePartitionRaceRowDeleted(t *testing.T) {
	raceAcquirePartition(t, `DELETE FROM public.cluster_leadership_members WHERE grp = 'g'`,
		`DELETE FROM public.cluster_leadership_members WHERE grp = 'g'`,
		`DELETE FROM public.cluster_leadership_partitions WHERE grp = 'g'`)
}
