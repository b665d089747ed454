package guard_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// awaitInt waits for a number to be written to path.
func awaitInt(t *testing.T, path string) int {
	t.Helper()
	for began := time.Now(); time.Since(began) < reportWithin; time.Sleep(10 * time.Millisecond) {
		if n := readInt(path); n > 0 {
			return n
		}
	}
	t.Fatalf("nothing written to %s within %s", path, reportWithin)
	return 0
}

// readInt reads the number in path (0 if none).
func readInt(path string) int {
	b, _ := os.ReadFile(path)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}
