package cli

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/tcpproxy"
)

// Red adversarial test, kept out of the normal suite (build tag
// adversary): go test -tags adversary -run TestAdvSurvivedOverdueThenExits ./cmd/internal/cli/

// advSurvivor is a command that outlives the overdue SIGTERM (it notes it
// in $OUT.ev and goes on), then ends on its own, with $CODE (default 0),
// once $OUT.done exists.
const advSurvivor = `echo "start $TENURE_FENCING_TOKEN" >>"$OUT"
trap 'echo term >>"$OUT.ev"' TERM
while [ ! -f "$OUT.done" ]; do sleep 0.05; done
exit ${CODE:-0}`

// TestAdvSurvivedOverdueThenExits: the requests to the coordinator are held
// until the command's overdue SIGTERM, which it survives, and let through
// at once (no reconnection to wait for): a renewal comes before the local
// deadline and the term goes on. When the command later ends on its own
// with 0 (or 3), that is its own end: tenure (no --restart, with or without
// --exit-on-loss) must exit with that code and not run it again (the
// guard's Overdue flag is about a SIGTERM long past).
func TestAdvSurvivedOverdueThenExits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		code  int
		extra []string
	}{
		{"exit 0", 0, nil},
		{"exit 3", 3, nil},
		{"exit 0 with --exit-on-loss", 0, []string{"--exit-on-loss"}},
	} {
		t.Run(tc.name, func(t *testing.T) { survivedOverdue(t, tc.code, tc.extra) })
	}
}

func survivedOverdue(t *testing.T, want int, extra []string) {
	// On a loaded machine the renewal may miss the local deadline after
	// all: that run tested nothing, and the scenario runs again.
	const attempts = 3
	for i := 1; ; i++ {
		_, proxied, p := proxiedEtcd(t)
		s := startSupervised(t, proxied, "adv5-"+strconv.Itoa(i), []string{"CODE=" + strconv.Itoa(want)}, advSurvivor, append(append([]string{}, advFlags...), extra...)...)
		awaitStarts(t, s.proc, s.out, 1, 20*time.Second)
		p.Hold(tcpproxy.Up)
		awaitFile(t, s.out+".ev", "term", lossTTL+slack)
		p.Release(tcpproxy.Up)
		time.Sleep(3 * time.Second) // past the local deadline the SIGTERM was for
		if n := len(starts(t, s.out)); n != 1 || s.exited() {
			if i == attempts {
				t.Fatalf("in %d runs the renewal never came before the local deadline (last: starts %d, exited %v)\n%s", attempts, n, s.exited(), s.err)
			}
			t.Logf("run %d: the renewal did not come in time (starts %d, exited %v); running again", i, n, s.exited())
			continue
		}
		if err := os.WriteFile(s.out+".done", nil, 0o644); err != nil {
			t.Fatal(err)
		}
		code := s.wait(t, 3*lossTTL+slack)
		n := len(starts(t, s.out))
		if ev, _ := os.ReadFile(s.out + ".ev"); (code != want || n != 1) && strings.Count(string(ev), "term") > 1 && i < attempts {
			// A later renewal was overdue too (a loaded machine): the
			// command then ended after a SIGTERM of its term's, which
			// is not the case under test.
			t.Logf("run %d: a second overdue SIGTERM came before the command's end (exit %d, starts %d); running again", i, code, n)
			continue
		}
		if code != want {
			t.Errorf("tenure exit %d; want %d (the command's own end)", code, want)
		}
		if n != 1 {
			t.Errorf("command started %d times; want 1 (it ended on its own)", n)
		}
		return
	}
}
