//go:build !race

package e2e

// RaceEnabled reports whether the tests were built with -race; the tenure
// binary under test is then built with -race too.
const RaceEnabled = false
