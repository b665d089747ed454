package e2e

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// LossTTL and the flags of LossFlags leave the command two seconds between
// the SIGTERM for an overdue renewal and the local deadline: time to exit
// (its guard to report it, even under the race detector) before the term
// ends, as with the default TTL of 10s.
const LossTTL = 5 * time.Second

var LossFlags = []string{"--ttl", LossTTL.String(), "--margin", "500ms", "--kill-grace", "2s"}

// LossCommand is a command that appends "start TOKEN" to out when it
// starts, then sleeps until a signal ends it: SIGTERM does, as with most
// programs (the helper "fence" ignores it).
func LossCommand(out string) []string {
	return []string{"sh", "-c", `echo "start $TENURE_FENCING_TOKEN" >>"$0"; exec sleep 3600`, out}
}

// Starts returns the tokens the command of LossCommand started with.
func Starts(t *testing.T, out string) []uint64 {
	t.Helper()
	b, err := os.ReadFile(out)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var tokens []uint64
	for _, l := range Lines(string(b)) {
		n, err := strconv.ParseUint(strings.TrimPrefix(l, "start "), 10, 64)
		if err != nil {
			t.Fatalf("line %q of %s: %v", l, out, err)
		}
		tokens = append(tokens, n)
	}
	return tokens
}

// AwaitStarts waits up to d for the command to have started n times and
// returns the tokens.
func AwaitStarts(t *testing.T, p *Proc, out string, n int, d time.Duration) []uint64 {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if tokens := Starts(t, out); len(tokens) >= n {
			return tokens
		}
		if p.Exited() {
			t.Fatalf("%s exited with %d before its command started %d times\n%s", p.Name, p.Code, n, p.Err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("command started %d times within %s; want %d", len(Starts(t, out)), d, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
