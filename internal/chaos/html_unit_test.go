package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// planted is a hand-built history with one violation: token 1's late
// write, sent by n0.1 (node 0) at 1.45s, accepted by the register at 2.801s
// after token 2 had written. It also has a rejected write, a write of
// unknown outcome, renewals, local deadlines, a pause and a partition.
func planted() *hist {
	h := legal().busy(1, "n1.1", 2, 3100, MinAcceptedWrites)
	h.Decisions[3].Accepted = true
	for i := range h.Events {
		if h.Events[i].Value == "late" && h.Events[i].Kind == kindWrite {
			h.Events[i].Result = resultAccepted
		}
	}
	h.Reads = nil
	h.write(0, "n0.1", 1, "refused-late", 2900, false)
	h.Events = append(h.Events, Event{Node: 1, Holder: "n1.1", Kind: kindWriteStart, At: ms(5900), Token: 2, Value: "lost"})
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
