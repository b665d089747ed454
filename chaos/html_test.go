package chaos

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/headless"
)

// TestReportRendersInChromium runs a short verification, writes its HTML
// report and checks in headless Chromium that the timeline rendered: one lane
// per node, leadership intervals labelled with tokens, fault windows.
func TestReportRendersInChromium(t *testing.T) {
	chromium := headless.Need(t)
	h, err := Run(context.Background(), Options{
		Seed: 5, Duration: 8 * time.Second, Families: []string{FamilyPartition, FamilyCrash}, NodeCommand: testNodeCommand,
		FaultStart: 1500 * time.Millisecond, FaultTail: time.Second, MaxGap: 600 * time.Millisecond, LeaderOnly: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	rep := Analyze(h)
	if len(rep.Spans) < 2 || len(rep.Faults) == 0 {
		t.Fatalf("run too quiet for a timeline: %d terms, %d faults", len(rep.Spans), len(rep.Faults))
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := rep.WriteHTMLFile(page); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dom, err := headless.DumpDOM(ctx, chromium, "file://"+page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dom, `<svg id="timeline"`) {
		t.Fatalf("rendered DOM has no timeline SVG:\n%.2000s", dom)
	}
	if got := strings.Count(dom, `class="lane-group"`); got != rep.Nodes {
		t.Errorf("rendered DOM has %d lanes; want %d", got, rep.Nodes)
	}
	if got := strings.Count(dom, `class="term"`); got != len(rep.Spans) {
		t.Errorf("rendered DOM has %d leadership intervals; want %d", got, len(rep.Spans))
	}
	if got := strings.Count(dom, `class="fault fault-`); got != len(rep.Faults) {
		t.Errorf("rendered DOM has %d fault windows; want %d", got, len(rep.Faults))
	}
	for _, s := range rep.Spans {
		if !strings.Contains(dom, "token "+strconv.FormatUint(s.Token, 10)) {
			t.Errorf("term with token %d not labelled in the DOM", s.Token)
		}
	}
}
