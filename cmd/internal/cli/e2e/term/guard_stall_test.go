package term

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
)

// testGuardStallVisible: issue #19's case, "tenure run --ttl 3s
// --kill-grace 1s" with the coordinator silent (every packet held, so
// renewals hang rather than fail). The grace cannot fit (the next renewal
// is overdue 1.285s after the last, the deadline 1.97s after it): tenure
// says so at start, with the arithmetic; it warns "renewal overdue", naming
// the cause, before the command dies; and the command gets SIGTERM before
// SIGKILL (it used to get SIGKILL alone, the first warning 0.3s before it).
func testGuardStallVisible(t *testing.T, c e2e.GuardCoord) {
	coord, proxy := c.Proxied(t)
	script := `trap 'date +%s.%N >> "$OUT.sig"' TERM
echo "$$ $TENURE_LEASE_FILE" > "$OUT.tmp" && mv "$OUT.tmp" "$OUT"
while :; do sleep 0.05; done`
	s := e2e.StartSupervised(t, coord, "stall", nil, script, "--ttl", "3s", "--kill-grace", "1s")
	pid, _ := s.Started(t)
	time.Sleep(time.Second) // a renewal or two go through
	proxy.Hold(tcpproxy.Up)
	proxy.Hold(tcpproxy.Down)
	e2e.WaitDead(t, pid, 3*time.Second+e2e.Slack, "the command after the coordinator went silent")
	died := time.Now()
	log := s.Err.String()
	for _, want := range []string{"--kill-grace 1s does not fit", "only 635ms before SIGKILL", "use --kill-grace 635ms or less, or --ttl 4s or more"} {
		if !strings.Contains(log, want) {
			t.Errorf("tenure's log does not say %q at start", want)
		}
	}
	term := e2e.Lines(e2e.ReadFile(s.Out + ".sig"))
	if len(term) != 1 {
		t.Fatalf("the command's trap saw SIGTERM %d times before it died; want once", len(term))
	}
	sec, err := strconv.ParseFloat(term[0], 64)
	if err != nil {
		t.Fatalf("SIGTERM time %q: %v", term[0], err)
	}
	termAt := time.Unix(0, int64(sec*1e9))
	warnAt, ok := firstLogTime(log, "renewal overdue", "no reply from the coordinator")
	if !ok {
		t.Fatalf("tenure never warned that a renewal was overdue, naming the cause")
	}
	if !warnAt.Before(died) {
		t.Errorf("renewal overdue logged at %s, after the command died (seen %s)", warnAt.Format(time.StampMilli), died.Format(time.StampMilli))
	}
	t.Logf("%s: renewal overdue %s before the command's death was seen, SIGTERM %s before it", c.Name,
		died.Sub(warnAt).Round(time.Millisecond), died.Sub(termAt).Round(time.Millisecond))
}

// firstLogTime is the time= of the first line of log (slog text) that
// contains every one of words.
func firstLogTime(log string, words ...string) (time.Time, bool) {
next:
	for _, l := range e2e.Lines(log) {
		for _, w := range words {
			if !strings.Contains(l, w) {
				continue next
			}
		}
		for _, f := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(f, "time="); ok {
				at, err := time.Parse(time.RFC3339Nano, v)
				return at, err == nil
			}
		}
	}
	return time.Time{}, false
}

// testGuardDefaultGrace: "tenure run --ttl 3s", --kill-grace left at its
// default (2s), which does not fit: tenure says so at INFO, not as a
// warning about a flag the user never set.
func testGuardDefaultGrace(t *testing.T, c e2e.GuardCoord) {
	coord, _ := c.Proxied(t)
	s := e2e.StartSupervised(t, coord, "grace", nil, `echo "$$ $TENURE_LEASE_FILE" > "$OUT.tmp" && mv "$OUT.tmp" "$OUT"; sleep 30`, "--ttl", "3s")
	s.Started(t)
	var note string
	for _, l := range e2e.Lines(s.Err.String()) {
		if strings.Contains(l, "--kill-grace 2s") {
			note = l
		}
	}
	if note == "" || !strings.Contains(note, "INFO") || strings.Contains(note, "WARN") {
		t.Errorf("tenure run --ttl 3s (default --kill-grace): the note on the grace is %q; want it at INFO", note)
	}
}
