//go:build !race

package e2e

// RaceEnabled reports whether the tests were built with -race (see
// RaceTenure for the tenure binary under test).
const RaceEnabled = false
