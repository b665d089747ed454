package term

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
)

// overdueSurvivor is a command that outlives the overdue SIGTERM (it notes it
// in $OUT.ev and goes on), then ends on its own, with $CODE (default 0),
// once $OUT.done exists.
const overdueSurvivor = `echo "start $TENURE_FENCING_TOKEN" >>"$OUT"
trap 'echo term >>"$OUT.ev"' TERM
while [ ! -f "$OUT.done" ]; do sleep 0.05; done
exit ${CODE:-0}`

// TestSurvivedOverdueThenExits: the requests to the coordinator are held
// until the command's overdue SIGTERM, which it survives, and let through
// at once (no reconnection to wait for): a renewal comes before the local
// deadline and the term goes on. When the command later ends on its own
// with 0 (or 3), that is its own end: tenure (no --restart, with or without
// --exit-on-loss) must exit with that code and not run it again (the
// guard's Overdue flag is about a SIGTERM long past).
func TestSurvivedOverdueThenExits(t *testing.T) {
	t.Parallel()
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
		s := e2e.StartSupervised(t, proxied, "survived-"+strconv.Itoa(i), []string{"CODE=" + strconv.Itoa(want)}, overdueSurvivor, append(append([]string{}, recampaignFlags...), extra...)...)
		e2e.AwaitStarts(t, s.Proc, s.Out, 1, 20*time.Second)
		p.Hold(tcpproxy.Up)
		awaitFile(t, s.Out+".ev", "term", e2e.LossTTL+e2e.Slack)
		p.Release(tcpproxy.Up)
		time.Sleep(3 * time.Second) // past the local deadline the SIGTERM was for
		if n := len(e2e.Starts(t, s.Out)); n != 1 || s.Exited() {
			if i == attempts {
				t.Fatalf("in %d runs the renewal never came before the local deadline (last: starts %d, exited %v)\n%s", attempts, n, s.Exited(), s.Err)
			}
			t.Logf("run %d: the renewal did not come in time (starts %d, exited %v); running again", i, n, s.Exited())
			continue
		}
		if err := os.WriteFile(s.Out+".done", nil, 0o644); err != nil {
			t.Fatal(err)
		}
		code := s.Wait(t, 3*e2e.LossTTL+e2e.Slack)
		n := len(e2e.Starts(t, s.Out))
		if ev, _ := os.ReadFile(s.Out + ".ev"); (code != want || n != 1) && strings.Count(string(ev), "term") > 1 && i < attempts {
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
