package chaos

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/headless"
)

// openReport writes rep's HTML page and opens it in headless Chromium.
func openReport(t *testing.T, chromium string, rep *Report) (*headless.Browser, context.Context) {
	t.Helper()
	page := filepath.Join(t.TempDir(), "report.html")
	if err := rep.WriteHTMLFile(page); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	b, err := headless.Open(ctx, chromium, "file://"+page, 1300, 900)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, ctx
}

// renderedViolation is a violation mark as Chromium laid it out.
type renderedViolation struct {
	Node, Lane, Title string
	X                 float64 // the mark's line, in SVG user units
	Top, Bottom       float64 // the mark's line on screen
	LaneTop           float64 // its lane on screen
	LaneBottom        float64
	Item              string // its entry in the list under the chart
}

const violationsJS = `Array.from(document.querySelectorAll('#timeline g.violation')).map(g => {
  const line = g.querySelector('line').getBoundingClientRect();
  const lane = document.querySelector('#timeline g.lane-group[data-node="' + g.dataset.node + '"] rect.lane').getBoundingClientRect();
  const item = document.querySelector('#violations li[data-n="' + g.id.replace('violation-', '') + '"]');
  return {Node: g.dataset.node, Lane: g.dataset.lane, Title: g.querySelector('title').textContent,
    X: parseFloat(g.querySelector('line').getAttribute('x1')), Top: line.top, Bottom: line.bottom,
    LaneTop: lane.top, LaneBottom: lane.bottom, Item: item ? item.textContent : ''};
})`

// The report of a history with a planted violation, rendered in Chromium:
// the violation's mark sits at its time on its writer's lane, its title
// explains it, and the list under the chart has the same entry.
func TestReportViolationInChromium(t *testing.T) {
	t.Parallel()
	chromium := headless.Need(t)
	rep := Analyze(&planted().History)
	b, ctx := openReport(t, chromium, rep)
	var got []renderedViolation
	if err := b.Eval(ctx, violationsJS, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d violation marks rendered; want 1: %+v", len(got), got)
	}
	v := got[0]
	if want := leftPad + 2.801/10*plotW; math.Abs(v.X-want) > 0.1 {
		t.Errorf("violation mark at x = %.1f; want %.1f (2.801s)", v.X, want)
	}
	if v.Node != "0" || v.Lane != "n0.1" || v.Top > v.LaneBottom || v.Bottom < v.LaneTop {
		t.Errorf("violation mark on node %s (%q), %.0f–%.0fpx; want on n0.1's lane, %.0f–%.0fpx", v.Node, v.Lane, v.Top, v.Bottom, v.LaneTop, v.LaneBottom)
	}
	const explanation = "write late with token 1 accepted (fenced path) after token 2"
	if want := "[1] stale writes accepted at 2.801s on n0.1: 2.801s: " + explanation; v.Title != want {
		t.Errorf("violation title = %q; want %q", v.Title, want)
	}
	if want := "[1] stale writes accepted at 2.801s on n0.1: 2.801s: " + explanation; v.Item != want {
		t.Errorf("violation list entry = %q; want %q", v.Item, want)
	}
}

// TestReportRendersInChromium runs a short verification, writes its HTML
// report and checks in headless Chromium that the timeline rendered: one lane
// per node, leadership intervals labelled with tokens, fault windows. It runs
// beside the other parallel tests (Chromium on recorded histories, the
// Kubernetes runs), within go test's -parallel: what it checks is the
// drawing, not a bound in time.
func TestReportRendersInChromium(t *testing.T) {
	t.Parallel()
	chromium := headless.Need(t)
	h, err := Run(context.Background(), testOptions(func(o *Options) {
		o.Seed, o.Duration, o.Families, o.LeaderOnly = 5, 8*time.Second, []string{FamilyPartition, FamilyCrash}, true
		o.FaultStart, o.FaultTail, o.MaxGap = 1500*time.Millisecond, time.Second, 600*time.Millisecond
	}))
	if err != nil {
		t.Fatal(err)
	}
	rep := Analyze(h)
	if len(rep.Spans) < 2 || len(rep.Faults) == 0 {
		t.Fatalf("run too quiet for a timeline: %d terms, %d faults", len(rep.Spans), len(rep.Faults))
	}
	b, ctx := openReport(t, chromium, rep)
	var counts struct {
		Lanes, Terms, Faults, Accepted int
		Labels                         []string
	}
	const js = `({Lanes: document.querySelectorAll('#timeline > g.lane-group').length,
  Terms: document.querySelectorAll('#timeline > rect.term').length,
  Faults: document.querySelectorAll('#timeline > rect.fault').length,
  Accepted: document.querySelectorAll('#timeline > rect.write-accepted').length,
  Labels: Array.from(document.querySelectorAll('#timeline > text.term-label')).map(e => e.textContent)})`
	if err := b.Eval(ctx, js, &counts); err != nil {
		t.Fatal(err)
	}
	if counts.Lanes != rep.Nodes || counts.Terms != len(rep.Spans) || counts.Faults != len(rep.Faults) || counts.Accepted == 0 {
		t.Errorf("rendered %d lanes, %d terms, %d faults, %d accepted-write marks; want %d, %d, %d, some",
			counts.Lanes, counts.Terms, counts.Faults, counts.Accepted, rep.Nodes, len(rep.Spans), len(rep.Faults))
	}
	labels := fmt.Sprint(counts.Labels)
	g := geom{origin: rep.Origin, total: float64(rep.Finish - rep.Origin)}
	for _, s := range rep.Spans {
		if w := g.x(s.End) - g.x(s.Start); w > 18 && !slices.Contains(counts.Labels, strconv.FormatUint(s.Token, 10)) {
			t.Errorf("term with token %d (%.0fpx wide) not labelled; labels %s", s.Token, w, labels)
		}
	}
}

// The glossary in Chromium: the label "late write across a pause" sits
// right of the rejected write drawn after the pause, on the paused node's
// lane; clicking it brings the glossary's entry into view. The lane name
// explains itself on hover and links to its entry.
func TestGlossaryInChromium(t *testing.T) {
	t.Parallel()
	chromium := headless.Need(t)
	b, ctx := openReport(t, chromium, Analyze(&paused().History))
	var got struct {
		TriRight, TriTop, TriBottom    float64
		NoteLeft, NoteTop, NoteBottom  float64
		NoteWidth, LaneTop, LaneBottom float64
		Href, NoteText, LaneTitle      string
		LaneHref, Entry                string
	}
	const js = `(() => {
  const tri = document.querySelector('#timeline polygon.write-rejected.late').getBoundingClientRect();
  const note = document.querySelector('#timeline a.late-note');
  const nr = note.querySelector('text').getBoundingClientRect();
  const lane = document.querySelector('#timeline g.lane-group[data-node="0"] rect.lane').getBoundingClientRect();
  const label = document.querySelector('#timeline g.lane-group[data-node="0"] a.lane-label-link');
  const dt = document.getElementById('glossary-late-writes');
  return {TriRight: tri.right, TriTop: tri.top, TriBottom: tri.bottom, NoteLeft: nr.left, NoteTop: nr.top, NoteBottom: nr.bottom,
    NoteWidth: nr.width, LaneTop: lane.top, LaneBottom: lane.bottom, Href: note.getAttribute('href'),
    NoteText: note.querySelector('text').textContent, LaneTitle: label.querySelector('title').textContent,
    LaneHref: label.getAttribute('href'), Entry: dt ? dt.nextElementSibling.textContent : ''};
})()`
	if err := b.Eval(ctx, js, &got); err != nil {
		t.Fatal(err)
	}
	if got.NoteText != "late write across a pause" || got.NoteWidth < 50 {
		t.Errorf("note %q, %.0fpx wide; want the words, legible", got.NoteText, got.NoteWidth)
	}
	if gap := got.NoteLeft - got.TriRight; gap < 0 || gap > 8 {
		t.Errorf("note starts %.1fpx right of the rejected write; want 0–8px (next to it)", gap)
	}
	if got.NoteTop < got.LaneTop || got.NoteBottom > got.LaneBottom+2 || got.NoteBottom < got.TriTop {
		t.Errorf("note %.0f–%.0fpx, write %.0f–%.0fpx, lane %.0f–%.0fpx; want the note beside the write, within the lane",
			got.NoteTop, got.NoteBottom, got.TriTop, got.TriBottom, got.LaneTop, got.LaneBottom)
	}
	if got.Href != "#glossary-late-writes" || !strings.Contains(got.Entry, "only the resource's fencing can") {
		t.Errorf("note links to %q, entry %q; want the glossary's entry on late writes", got.Href, got.Entry)
	}
	if !strings.HasPrefix(got.LaneTitle, "n0.1: node slot 0, its process 1") || got.LaneHref != "#glossary-lanes" {
		t.Errorf("lane label title %q, link %q; want it explained, linked to the glossary", got.LaneTitle, got.LaneHref)
	}
	const click = `document.querySelector('#timeline a.late-note').dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, view: window}))`
	var clicked bool
	if err := b.Eval(ctx, click, &clicked); err != nil {
		t.Fatal(err)
	}
	var after struct {
		Hash     string
		Top, Win float64
	}
	if err := b.Eval(ctx, `({Hash: location.hash, Top: document.getElementById('glossary-late-writes').getBoundingClientRect().top, Win: innerHeight})`, &after); err != nil {
		t.Fatal(err)
	}
	if after.Hash != "#glossary-late-writes" || after.Top < 0 || after.Top > after.Win {
		t.Errorf("after a click on the note: location %q, entry at %.0fpx of %.0f; want the entry in view", after.Hash, after.Top, after.Win)
	}
}
