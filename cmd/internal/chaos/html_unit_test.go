package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/history"
)

// planted is a hand-built history with one violation: token 1's late
// write, sent by n0.1 (node 0) at 1.45s, accepted by the register at 2.801s
// after token 2 had written. It also has a rejected write, a write of
// unknown outcome, renewals, local deadlines, a pause and a partition.
func planted() *hist {
	h := legal().busy(1, "n1.1", 2, 3100, MinAcceptedWrites)
	h.Decisions[3].Accepted = true
	for i := range h.Events {
		if h.Events[i].Value == "late" && h.Events[i].Kind == history.KindWrite {
			h.Events[i].Result = history.ResultAccepted
		}
	}
	h.Reads = nil
	h.write(0, "n0.1", 1, "refused-late", 2900, false)
	h.Events = append(h.Events, history.Event{Node: 1, Holder: "n1.1", Kind: history.KindWriteStart, At: ms(5900), Token: 2, Value: "lost"})
	h.Faults = []FaultRecord{
		{Fault: Fault{Family: FamilyPause, Dur: 1200 * 1e6}, Target: 0, Holder: "n0.1", Start: ms(1300), End: ms(2500)},
		{Fault: Fault{Family: FamilyPartition, Dur: 2000 * 1e6}, Target: 1, Holder: "n1.1", Start: ms(6500), End: ms(8500)},
	}
	h.Options.Families = []string{FamilyPause, FamilyPartition}
	return h
}

// The HTML report marks the violation at its time on its writer's lane,
// with its explanation on hover and in the list under the chart, and draws
// writes, renewals, deadlines, fault families and the axis title.
func TestHTMLMarksViolation(t *testing.T) {
	rep := Analyze(&planted().History)
	if rep.StaleWrites.Count != 1 {
		t.Fatalf("stale writes = %d (%v); want 1", rep.StaleWrites.Count, rep.StaleWrites.Details)
	}
	b, err := rep.renderHTML()
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if dir := os.Getenv("TENURE_REPORT_DIR"); dir != "" {
		os.WriteFile(filepath.Join(dir, "planted.html"), b, 0o644)
	}
	marks := regexp.MustCompile(`<g class="violation" [^>]*>`).FindAllString(page, -1)
	if len(marks) != 1 {
		t.Fatalf("%d violation marks; want 1:\n%s", len(marks), marks)
	}
	// 2.801s of a 10s run on a 1100px plot that starts at 110px.
	wantX := fmt.Sprintf(`data-x="%.1f"`, leftPad+2.801/10*plotW)
	for _, want := range []string{wantX, `data-node="0"`, `data-lane="n0.1"`, `data-at="2.801s"`} {
		if !strings.Contains(marks[0], want) {
			t.Errorf("violation mark %s lacks %s", marks[0], want)
		}
	}
	title := "stale writes accepted at 2.801s on n0.1: 2.801s: write late with token 1 accepted (fenced path) after token 2"
	for _, want := range []string{
		"<title>[1] " + title + "</title>", // on hover
		`<li class="violation-item" data-n="1"><b>[1]</b> <b>stale writes accepted</b> at 2.801s on n0.1: 2.801s: write late`,
		`class="write-accepted"`, `class="write-rejected"`, `class="write-unknown"`,
		`<circle class="renewal"`, `<line class="deadline"`,
		`class="fault fault-pause"`, `class="fault fault-partition"`, `>pause</text>`, `>partition</text>`,
		`.fault-pause{fill:` + familyColours[FamilyPause] + `}`,
		`data-lane="n0.1"`, `data-lane="n1.1"`,
		"seconds since start",
		`<span class="verdict bad">1 safety violation(s)</span>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{`data-lane="node`, ">node 0</text>", "<script", "<link"} {
		if strings.Contains(page, bad) {
			t.Errorf("page has %q: lanes are named as the summary names holders, and the page is self-contained", bad)
		}
	}
}

// paused is a hand-built history with a late write across a pause: n0.1
// (token 1, last renewal sent at 1.2s) sends write "late" at 1.45s, is
// paused from 1.3s to 3.65s, and the write lands at 3.6s, after its lease
// (3.18s) and after n1.1 (token 2) has written: the register rejects it.
func paused() *hist {
	h := newHist()
	h.term(0, "n0.1", 1, 0, 1500).term(1, "n1.1", 2, 3300, 8000)
	h.write(0, "n0.1", 1, "a", 100, true).write(1, "n1.1", 2, "c", 3400, true)
	h.busy(1, "n1.1", 2, 3500, MinAcceptedWrites)
	h.write(0, "n0.1", 1, "late", 1450, false)
	h.Decisions[len(h.Decisions)-1].At = ms(3600)
	h.Events[len(h.Events)-1].At = ms(3602)
	h.Pauses["n0.1"] = [][2]int64{{ms(1300), ms(3650)}}
	h.Faults = []FaultRecord{{Fault: Fault{Family: FamilyPause, Dur: 2350 * time.Millisecond}, Target: 0, Holder: "n0.1", Start: ms(1300), End: ms(3650)}}
	h.Options.Families = []string{FamilyPause}
	return h
}

// A write in flight across a pause that lands after its lease is counted
// as a late write across a pause, rejected or accepted, not as a lease
// overrun; the summary says how fencing decided it, and the page marks
// it, labels it with a link to the glossary, and explains it there, with
// the lane names.
func TestHTMLExplainsLateWritesAndLanes(t *testing.T) {
	rep := Analyze(&paused().History)
	if rep.LateWritesAcrossPause != 1 || rep.LateWritesRejected != 1 || !rep.OK() {
		t.Fatalf("late writes across a pause %d, rejected %d, violations %d; want 1, 1, 0", rep.LateWritesAcrossPause, rep.LateWritesRejected, rep.Violations)
	}
	var sum strings.Builder
	rep.WriteSummary(&sum)
	if want := "landed after their lease: only fencing can decide them, and it did: 1 rejected (a newer token had written), 0 accepted (none had yet)"; !strings.Contains(sum.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, sum.String())
	}
	b, err := rep.renderHTML()
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`<polygon class="write-rejected late"`,
		"a late write across a pause, sent at 1.450s before n0.1 was paused, landed after its lease; fencing rejected it, since a newer token had written",
		`<a class="late-note" href="#glossary-late-writes">`,
		`<dt id="glossary-late-writes">Late writes across a pause</dt>`,
		"They are not violations: they are fencing doing its job.",
		`<a class="lane-label-link" href="#glossary-lanes"><title>n0.1: node slot 0, its process 1`,
		`<dt id="glossary-lanes">Lanes: n0.1, n0.1–n0.2</dt>`,
		`<dt id="glossary-fault-clock">Fault: clock</dt>`,
		`<dt id="glossary-check-lease-overrun">Checker: lease overrun</dt>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, `class="late-note"`); n != 1 {
		t.Errorf("%d late-write notes; want 1 (one per pause)", n)
	}
}

// laneTitle explains a lane's label.
func TestLaneTitle(t *testing.T) {
	for _, tc := range []struct {
		node        int
		label, want string
	}{
		{0, "n0.1", "n0.1: node slot 0, its process 1 (nS.G"},
		{2, "n2.1–n2.3", "n2.1–n2.3: node slot 2, its processes 1 to 3 (nS.G"},
		{1, "n1", "n1: node slot 1, no process of it led or was struck"},
	} {
		if got := laneTitle(tc.node, tc.label); !strings.HasPrefix(got, tc.want) {
			t.Errorf("laneTitle(%d, %q) = %q; want it to start with %q", tc.node, tc.label, got, tc.want)
		}
	}
}
