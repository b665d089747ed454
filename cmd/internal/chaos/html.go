package chaos

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"slices"
	"strings"
	"time"
)

// WriteHTMLFile writes the report as one self-contained HTML page: the
// verdict, an inline SVG timeline with one lane per node slot, the list of
// violations and the summary.
func (r *Report) WriteHTMLFile(name string) error {
	b, err := r.renderHTML()
	if err != nil {
		return err
	}
	return os.WriteFile(name, b, 0o644)
}

// familyColours gives each fault family its colour on the timeline.
var familyColours = map[string]string{
	FamilyPartition: "#f39c12",
	FamilyBlackhole: "#8e44ad",
	FamilyLatency:   "#f4d03f",
	FamilyReset:     "#48c9b0",
	FamilyPause:     "#ec7063",
	FamilyCrash:     "#566573",
	FamilyMember:    "#85c1e9",
	FamilyAPIServer: "#2e86c1",
	FamilyDegrade:   "#a04000",
	FamilyClock:     "#d81b60",
}

// Timeline geometry, in pixels.
const (
	laneH   = 44.0  // a lane: renewals on top, the term, writes below
	laneGap = 8.0   // between lanes
	leftPad = 110.0 // lane labels
	plotW   = 1100.0
	topPad  = 52.0 // two legend rows
	axisH   = 44.0 // tick labels and the axis title
)

// geom places times and lanes on the timeline.
type geom struct {
	origin int64
	total  float64 // ns
}

// x returns the horizontal position of Mono time t, clamped to the plot.
func (g geom) x(t int64) float64 {
	v := float64(t-g.origin) / g.total * plotW
	return leftPad + min(max(v, 0), plotW)
}

// y returns the top of node slot n's lane.
func (g geom) y(n int) float64 { return topPad + float64(n)*(laneH+laneGap) }

// rel returns t in seconds since the start.
func (g geom) rel(t int64) float64 { return float64(t-g.origin) / 1e9 }

// shape is one element drawn on the timeline: a rect, a circle (X, Y its
// centre, W its radius), a line (X, Y to X, Y+H), a polygon (Points) or a
// note (Text at X, Y, a link to Href).
type shape struct {
	Kind          string // rect, circle, line, polygon, note
	X, Y, W, H    float64
	Points, Class string
	Title         string
	Text, Href    string
	// Label, when set, is written at LX, LY in class LabelClass.
	Label, LabelClass string
	LX, LY            float64
}

// violationMark is one violation drawn on the timeline: a line across its
// lane with a numbered diamond on top.
type violationMark struct {
	N          int // its number in the list under the chart
	X, Y1, Y2  float64
	Diamond    string // the diamond's points
	Node       int
	Lane, At   string
	Check, Txt string
}

// violationItem is one violation in the list under the chart.
type violationItem struct {
	N         int // 0 when it is not drawn
	At, Lane  string
	Check     string
	Text      string
	MoreCount int // "… and N more" after a checker's last item
}

type lane struct {
	Y     float64
	Node  int
	Label string
	Title string // what the label means
}

type legendItem struct {
	X      float64
	Y      float64
	Swatch shape
	Label  string
}

type htmlPage struct {
	R            *Report
	Summary      string
	Verdict      string
	VerdictClass string
	Width        float64
	Height       float64
	LeftPad      float64
	PlotRight    float64
	AxisY        float64
	AxisMid      float64
	FamilyCSS    template.CSS
	Lanes        []lane
	Shapes       []shape
	Violations   []violationMark
	Items        []violationItem
	Ticks        []shape
	Legend       []legendItem
	FaultLines   []string
	Glossary     []entry
}

// renderHTML renders the report page.
func (r *Report) renderHTML() ([]byte, error) {
	var sum bytes.Buffer
	r.WriteSummary(&sum)
	total := float64(r.Finish - r.Origin)
	if total <= 0 {
		total = 1
	}
	g := geom{origin: r.Origin, total: total}
	p := htmlPage{R: r, Summary: sum.String(), Verdict: r.Verdict(), Width: leftPad + plotW + 20, LeftPad: leftPad, PlotRight: leftPad + plotW}
	p.VerdictClass = map[bool]string{true: "ok", false: "bad"}[r.OK()]
	if r.OK() && !r.Conclusive() {
		p.VerdictClass = "inconclusive"
	}
	labels := laneLabels(r)
	for n := range r.Nodes {
		p.Lanes = append(p.Lanes, lane{Y: g.y(n), Node: n, Label: labels[n], Title: laneTitle(n, labels[n])})
	}
	p.AxisY = g.y(r.Nodes)
	p.Height = p.AxisY + axisH
	p.AxisMid = leftPad + plotW/2
	p.FamilyCSS = familyCSS()
	p.Shapes = append(p.Shapes, faultShapes(r, g)...)
	p.Shapes = append(p.Shapes, termShapes(r, g)...)
	p.Shapes = append(p.Shapes, pointShapes(r, g, labels)...)
	p.Shapes = append(p.Shapes, lateNotes(r, g)...)
	p.Glossary = glossary(r)
	p.Violations, p.Items = violations(r, g, labels)
	p.Ticks = ticks(g, p.AxisY)
	p.Legend = legend(r)
	for _, f := range r.Faults {
		p.FaultLines = append(p.FaultLines, faultLine(f, g))
	}
	var out bytes.Buffer
	if err := pageTmpl.Execute(&out, p); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// laneLabels names each node slot's lane after the holders it ran, as the
// text summary names them: "n0.1", or "n0.1–n0.3" after restarts.
func laneLabels(r *Report) []string {
	holders := make([][]string, r.Nodes)
	see := func(node int, holder string) {
		if node >= 0 && node < r.Nodes && holder != "" && !slices.Contains(holders[node], holder) {
			holders[node] = append(holders[node], holder)
		}
	}
	for _, s := range r.Spans {
		see(s.Node, s.Holder)
	}
	for _, f := range r.Faults {
		see(f.Target, f.Holder)
	}
	for _, pt := range r.timeline {
		see(pt.Node, pt.Holder)
	}
	out := make([]string, r.Nodes)
	for n, hs := range holders {
		slices.SortFunc(hs, compareHolders)
		switch len(hs) {
		case 0:
			out[n] = fmt.Sprintf("n%d", n)
		case 1:
			out[n] = hs[0]
		default:
			out[n] = hs[0] + "–" + hs[len(hs)-1]
		}
	}
	return out
}

// compareHolders orders holder names "nS.G" by generation G.
func compareHolders(a, b string) int {
	ga, gb := a[strings.LastIndex(a, ".")+1:], b[strings.LastIndex(b, ".")+1:]
	if len(ga) != len(gb) {
		return len(ga) - len(gb)
	}
	return strings.Compare(ga, gb)
}

// familyCSS returns the style rule of each fault family's colour.
func familyCSS() template.CSS {
	var b strings.Builder
	for _, f := range Families() {
		fmt.Fprintf(&b, ".fault-%s{fill:%s}\n", f, familyColours[f])
	}
	return template.CSS(b.String())
}

// faultShapes draws each fault as a band of its family's colour over its
// node's lane (over every lane for a member), labelled with the family.
func faultShapes(r *Report, g geom) []shape {
	var out []shape
	for _, f := range r.Faults {
		y, h := g.y(0)-3, g.y(r.Nodes)-laneGap-g.y(0)+6
		if f.Target >= 0 {
			y, h = g.y(f.Target)-3, laneH+6
		}
		w := max(g.x(f.End)-g.x(f.Start), 2)
		title := fmt.Sprintf("%s fault on %s, %.3fs–%.3fs", f.Family, faultWho(f), g.rel(f.Start), g.rel(f.End))
		if f.Note != "" {
			title += ": " + f.Note
		}
		s := shape{Kind: "rect", X: g.x(f.Start), Y: y, W: w, H: h, Class: "fault fault-" + f.Family, Title: title}
		if w >= 6*float64(len(f.Family)) {
			s.Label, s.LabelClass, s.LX, s.LY = f.Family, "fault-label", s.X+2, s.Y+h-2
		}
		out = append(out, s)
	}
	return out
}

// faultLine describes fault f as it struck: when, whom, and as scheduled.
func faultLine(f FaultRecord, g geom) string {
	s := fmt.Sprintf("%7.3fs–%.3fs  %s  (scheduled: %s)", g.rel(f.Start), g.rel(f.End), faultWho(f), strings.TrimSpace(f.Fault.String()))
	if f.Note != "" {
		s += " (" + f.Note + ")"
	}
	return s
}

// faultWho names what fault f struck.
func faultWho(f FaultRecord) string {
	switch f.Family {
	case FamilyMember:
		return fmt.Sprintf("etcd member %d", f.Member)
	case FamilyAPIServer:
		return "the API server"
	}
	return f.Holder
}

// termShapes draws each term as a bar in its lane, labelled with its token.
func termShapes(r *Report, g geom) []shape {
	var out []shape
	for _, s := range r.Spans {
		w := max(g.x(s.End)-g.x(s.Start), 1)
		t := shape{Kind: "rect", X: g.x(s.Start), Y: g.y(s.Node) + 9, W: w, H: 22, Class: "term",
			Title: fmt.Sprintf("%s token %d: %.3fs–%.3fs (%s)", s.Holder, s.Token, g.rel(s.Start), g.rel(s.End), s.How)}
		if w > 18 {
			t.Label, t.LabelClass, t.LX, t.LY = fmt.Sprint(s.Token), "term-label", t.X+2, t.Y+15
		}
		out = append(out, t)
	}
	return out
}

// pointShapes draws the timeline's points: renewals as dots above the term
// (hollow when failed), local deadlines as dashed lines across the lane,
// writes below it (accepted: a green tick; rejected: a red triangle;
// unknown: a hollow grey square). Writes of one kind in one pixel column
// of a lane are drawn once, their count in the tooltip.
func pointShapes(r *Report, g geom, labels []string) []shape {
	type bucket struct {
		node, col int
		kind      string
		late      bool
	}
	var out []shape
	writes := map[bucket]int{} // → index in out
	count := map[int]int{}     // index in out → writes drawn there
	for _, pt := range r.timeline {
		if pt.Node < 0 || pt.Node >= r.Nodes {
			continue
		}
		x, y := g.x(pt.At), g.y(pt.Node)
		switch pt.Kind {
		case pointRenewal, pointRenewalFailed:
			out = append(out, shape{Kind: "circle", X: x, Y: y + 4, W: 2.5, Class: pt.Kind, Title: pt.Text})
		case pointDeadline:
			out = append(out, shape{Kind: "line", X: x, Y: y, H: laneH, Class: "deadline", Title: pt.Text})
		default:
			b := bucket{pt.Node, int(x), pt.Kind, pt.Late}
			i, ok := writes[b]
			if !ok {
				i, writes[b] = len(out), len(out)
				out = append(out, writeShape(pt, x, y))
			}
			if count[i]++; count[i] > 1 {
				out[i].Title = fmt.Sprintf("%d writes %s here on %s; the last: %s", count[i], pt.Kind, labels[pt.Node], pt.Text)
			}
		}
	}
	return out
}

// lateNotes labels the first late write across a pause after each pause,
// right of its mark on its lane, with a link to the glossary's entry that
// explains it.
func lateNotes(r *Report, g geom) []shape {
	var out []shape
	labelled := map[int]bool{} // pause faults whose late write is labelled
	for _, pt := range r.timeline {
		if !pt.Late || pt.Node < 0 || pt.Node >= r.Nodes {
			continue
		}
		f := pauseBefore(r.Faults, pt.Node, pt.At)
		if labelled[f] {
			continue
		}
		labelled[f] = true
		out = append(out, shape{Kind: "note", X: g.x(pt.At) + 5, Y: g.y(pt.Node) + 41, Class: "late-note",
			Text: "late write across a pause", Href: "#glossary-late-writes",
			Title: "A write sent before the pause landed after its lease: fencing decided it. Click for the glossary."})
	}
	return out
}

// pauseBefore returns the index in faults of the last pause of node slot
// node that began by at, or -1.
func pauseBefore(faults []FaultRecord, node int, at int64) int {
	last := -1
	for i, f := range faults {
		if f.Family == FamilyPause && f.Target == node && f.Start <= at {
			last = i
		}
	}
	return last
}

// writeShape is the mark of one write at x in the lane at y.
func writeShape(pt point, x, y float64) shape {
	s := shape{X: x, Y: y + 33, Class: "write-" + pt.Kind, Title: pt.Text}
	if pt.Late {
		s.Class += " late"
	}
	switch pt.Kind {
	case pointAccepted:
		s.Kind, s.W, s.H = "rect", 1.2, 7
	case pointRejected:
		s.Kind, s.Points = "polygon", fmt.Sprintf("%.1f,%.1f %.1f,%.1f %.1f,%.1f", x-3, y+33, x+3, y+33, x, y+41)
	default:
		s.Kind, s.X, s.W, s.H = "rect", x-2.5, 5, 5
	}
	return s
}

// violations returns the violation marks drawn on the timeline and the list
// of every violation reported, numbered alike.
func violations(r *Report, g geom, labels []string) ([]violationMark, []violationItem) {
	var marks []violationMark
	var items []violationItem
	for _, c := range r.Checks() {
		if c.Count == 0 {
			continue
		}
		for _, m := range c.Marks {
			it := violationItem{At: fmt.Sprintf("%.3fs", g.rel(m.At)), Check: c.Name, Text: m.Text}
			if m.Node >= 0 && m.Node < r.Nodes {
				it.N, it.Lane = len(marks)+1, labels[m.Node]
				x, y := g.x(m.At), g.y(m.Node)
				marks = append(marks, violationMark{N: it.N, X: x, Y1: y - 2, Y2: y + laneH + 2, Node: m.Node, Lane: it.Lane, At: it.At, Check: c.Name, Txt: m.Text,
					Diamond: fmt.Sprintf("%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f", x, y-9, x+5, y-4, x, y+1, x-5, y-4)})
			}
			items = append(items, it)
		}
		if len(c.Marks) == 0 {
			for _, d := range c.Details {
				items = append(items, violationItem{Check: c.Name, Text: d})
			}
		}
		if shown := max(len(c.Marks), len(c.Details)); c.Count > shown {
			items[len(items)-1].MoreCount = c.Count - shown
		}
	}
	return marks, items
}

// ticks returns the axis's tick labels below y.
func ticks(g geom, y float64) []shape {
	step := 10 * time.Second
	switch {
	case g.total <= float64(20*time.Second):
		step = 2 * time.Second
	case g.total <= float64(60*time.Second):
		step = 5 * time.Second
	}
	var out []shape
	for t := time.Duration(0); float64(t) <= g.total; t += step {
		x := leftPad + float64(t)/g.total*plotW
		out = append(out, shape{Kind: "line", X: x, Y: y - 4, H: 6, Class: "tick",
			Label: fmt.Sprintf("%gs", t.Seconds()), LabelClass: "tick-label", LX: x, LY: y + 14})
	}
	return out
}

// legend returns the chart's legend: what each mark means on the first row,
// the colour of each fault family of the run on the second.
func legend(r *Report) []legendItem {
	items := []legendItem{
		{Swatch: shape{Kind: "rect", Y: -5, W: 14, H: 10, Class: "term"}, Label: "term (token)"},
		{Swatch: shape{Kind: "circle", X: 4, W: 2.5, Class: pointRenewal}, Label: "renewal"},
		{Swatch: shape{Kind: "circle", X: 4, W: 2.5, Class: pointRenewalFailed}, Label: "failed renewal"},
		{Swatch: shape{Kind: "line", X: 4, Y: -6, H: 12, Class: "deadline"}, Label: "local deadline"},
		{Swatch: shape{Kind: "rect", X: 4, Y: -5, W: 1.2, H: 10, Class: "write-" + pointAccepted}, Label: "write accepted"},
		{Swatch: shape{Kind: "polygon", Points: "0,-4 6,-4 3,4", Class: "write-" + pointRejected}, Label: "write rejected"},
		{Swatch: shape{Kind: "rect", Y: -3, W: 5, H: 5, Class: "write-" + pointUnknown}, Label: "write outcome unknown"},
		{Swatch: shape{Kind: "polygon", Points: "4,-6 10,0 4,6 -2,0", Class: "violation-mark"}, Label: "safety violation"},
	}
	x := 8.0
	for i := range items {
		items[i].X, items[i].Y = x, 14
		x += 30 + 6.5*float64(len(items[i].Label))
	}
	x = leftPad
	fams := slices.Clone(r.Families)
	for _, f := range r.Faults {
		if !slices.Contains(fams, f.Family) {
			fams = append(fams, f.Family)
		}
	}
	row2 := []legendItem{{X: 8, Y: 34, Label: "faults:"}}
	for _, f := range fams {
		row2 = append(row2, legendItem{X: x, Y: 34, Swatch: shape{Kind: "rect", Y: -5, W: 14, H: 10, Class: "fault fault-" + f}, Label: f})
		x += 30 + 6.5*float64(len(f))
	}
	return append(items, row2...)
}
