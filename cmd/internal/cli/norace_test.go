//go:build !race

package cli

// raceEnabled reports whether the tests were built with -race; the tenure
// binary under test is then built with -race too.
const raceEnabled = false
