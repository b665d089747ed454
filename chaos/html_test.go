package chaos

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/require"
)

// TestReportRendersInChromium runs a short verification, writes its HTML
// report and checks in headless Chromium that the timeline rendered: one lane
// per node, leadership intervals labelled with tokens, fault windows.
func TestReportRendersInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		require.Chromium.Missing(t, err)
	}
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
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--dump-dom", "file://"+page)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	dom := string(out)
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
