//go:build !linux

package guard

import (
	"fmt"
	"io"
)

// Main runs the guard; it needs Linux (PR_SET_CHILD_SUBREAPER, /proc).
func Main(args []string, stderr io.Writer) int {
	fmt.Fprintf(stderr, "tenure %s: needs Linux\n", Command)
	return 2
}

// Undumpable does nothing: the guard needs Linux.
func Undumpable() error { return nil }
