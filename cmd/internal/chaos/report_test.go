package chaos

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/tenure-dev/tenure/internal/history"
)

// busy adds n accepted writes of holder's term token, 50ms apart from
// `from` ms, to h.
func (h *hist) busy(node int, holder string, token uint64, from int64, n int) *hist {
	for i := range n {
		h.write(node, holder, token, fmt.Sprintf("%s#busy%d", holder, i), from+50*int64(i), true)
	}
	return h
}

// A run proves something only when some node was elected and the register
// accepted at least MinAcceptedWrites writes; a violation outranks an
// inconclusive run.
func TestReportConclusive(t *testing.T) {
	for _, tc := range []struct {
		name       string
		build      func() *hist
		conclusive bool
		verdict    string // the start of Verdict()
	}{
		{"no leader ever", func() *hist { return newHist().read(100, 200, 0, "") }, false, "inconclusive: no node was ever elected leader"},
		{"too few writes", legal, false, fmt.Sprintf("inconclusive: the register accepted 3 write(s), fewer than %d", MinAcceptedWrites)},
		{"a normal history", func() *hist { return legal().busy(1, "n1.1", 2, 3100, MinAcceptedWrites) }, true, "no safety violation"},
		{"a violation with few writes", func() *hist {
			h := legal()
			h.Decisions[3].Accepted = true // token 1's late write, after token 2
			h.Events[len(h.Events)-1].Result = history.ResultAccepted
			return h
		}, false, "1 safety violation(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Analyze(&tc.build().History)
			if rep.Conclusive() != tc.conclusive {
				t.Errorf("Conclusive() = %v (Inconclusive %q); want %v", rep.Conclusive(), rep.Inconclusive, tc.conclusive)
			}
			if got := rep.Verdict(); !strings.HasPrefix(got, tc.verdict) {
				t.Errorf("Verdict() = %q; want it to start with %q", got, tc.verdict)
			}
			var sum bytes.Buffer
			rep.WriteSummary(&sum)
			if want := "verdict: " + rep.Verdict(); !strings.Contains(sum.String(), want) {
				t.Errorf("summary lacks %q:\n%s", want, sum.String())
			}
			if !rep.Conclusive() && strings.Contains(sum.String(), "no safety violation") {
				t.Errorf("an inconclusive run's summary says no safety violation:\n%s", sum.String())
			}
			if strings.Contains(sum.String(), "ok Ok") {
				t.Errorf("summary says ok twice:\n%s", sum.String())
			}
		})
	}
}
