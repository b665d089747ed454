package chaos

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"sort"
	"strings"
	"time"
)

// WriteHTMLFile writes the report as one self-contained HTML page: the
// summary and an inline SVG timeline with one lane per node.
func (r *Report) WriteHTMLFile(name string) error {
	b, err := r.HTML()
	if err != nil {
		return err
	}
	return os.WriteFile(name, b, 0o644)
}

type svgRect struct {
	X, Y, W, H float64
	Class      string
	Title      string
	Label      string
}

type svgLane struct {
	Y     float64
	Label string
}

type htmlPage struct {
	R       *Report
	Summary string
	Width   float64
	Height  float64
	Lanes   []svgLane
	Rects   []svgRect
	Marks   []svgRect
	Ticks   []svgRect
	Verdict string
	OK      bool
}

const (
	laneH   = 34.0
	laneGap = 10.0
	leftPad = 90.0
	plotW   = 1100.0
	topPad  = 24.0
)

// HTML renders the report page.
func (r *Report) HTML() ([]byte, error) {
	var sum bytes.Buffer
	r.WriteSummary(&sum)
	p := htmlPage{R: r, Summary: sum.String(), Width: leftPad + plotW + 20, OK: r.OK()}
	p.Verdict = "no safety violation"
	if !r.OK() {
		p.Verdict = fmt.Sprintf("%d safety violation(s)", r.Violations)
	}
	total := float64(r.Finish - r.Origin)
	if total <= 0 {
		total = 1
	}
	x := func(t int64) float64 {
		v := float64(t-r.Origin) / total * plotW
		return leftPad + min(max(v, 0), plotW)
	}
	laneY := func(n int) float64 { return topPad + float64(n)*(laneH+laneGap) }
	for n := range r.Nodes {
		p.Lanes = append(p.Lanes, svgLane{Y: laneY(n), Label: fmt.Sprintf("node %d", n)})
	}
	p.Height = laneY(r.Nodes) + 30
	rel := func(t int64) float64 { return float64(t-r.Origin) / 1e9 }
	for _, f := range r.Faults {
		y, h := topPad-4, laneY(r.Nodes)-topPad
		if f.Target >= 0 {
			y, h = laneY(f.Target)-4, laneH+8
		}
		w := max(x(f.End)-x(f.Start), 2)
		p.Rects = append(p.Rects, svgRect{X: x(f.Start), Y: y, W: w, H: h, Class: "fault fault-" + f.Family,
			Title: fmt.Sprintf("%s %s %.2fs–%.2fs", f.Family, f.Holder, rel(f.Start), rel(f.End))})
	}
	for _, s := range r.Spans {
		w := max(x(s.End)-x(s.Start), 1)
		p.Rects = append(p.Rects, svgRect{X: x(s.Start), Y: laneY(s.Node) + 4, W: w, H: laneH - 8, Class: "term",
			Title: fmt.Sprintf("%s token %d: %.3fs–%.3fs (%s)", s.Holder, s.Token, rel(s.Start), rel(s.End), s.How),
			Label: fmt.Sprint(s.Token)})
	}
	p.Marks = rejectionMarks(r, x, func(n int) float64 { return laneY(n) + laneH - 2 })
	step := 10 * time.Second
	if time.Duration(total) <= 20*time.Second {
		step = 2 * time.Second
	}
	for t := time.Duration(0); float64(t) <= total; t += step {
		p.Ticks = append(p.Ticks, svgRect{X: leftPad + float64(t)/total*plotW, Y: p.Height - 10, Label: fmt.Sprintf("%gs", t.Seconds())})
	}
	sort.SliceStable(p.Rects, func(i, j int) bool { return p.Rects[i].Class != "term" && p.Rects[j].Class == "term" })
	var out bytes.Buffer
	if err := pageTmpl.Execute(&out, p); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// rejectionMarks marks each rejected write on its writer's lane; x places a
// time, y a lane.
func rejectionMarks(r *Report, x func(int64) float64, y func(node int) float64) []svgRect {
	node := map[string]int{}
	for _, s := range r.Spans {
		node[fmt.Sprintf("%s#", s.Holder)] = s.Node
	}
	var marks []svgRect
	for _, d := range r.Rejections {
		n := 0
		if i := strings.LastIndex(d.Value, "#"); i > 0 {
			if v, ok := node[d.Value[:i+1]]; ok {
				n = v
			}
		}
		marks = append(marks, svgRect{X: x(d.At), Y: y(n), W: 3, H: 8, Class: "rejected",
			Title: fmt.Sprintf("rejected %s token %d at %.3fs (%d)", d.Value, d.Token, float64(d.At-r.Origin)/1e9, d.Status)})
	}
	return marks
}

var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>tenure verify — seed {{.R.Seed}}</title>
<style>
body{font:14px system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px;margin:0 0 4px}
.verdict{font-weight:bold;padding:4px 8px;border-radius:4px;display:inline-block}
.ok{background:#d7f5dd;color:#175c26}.bad{background:#fbd9d9;color:#8a1111}
pre{background:#f6f6f6;padding:12px;overflow-x:auto}
svg text{font:11px system-ui,sans-serif}
.term{fill:#4a7fd4;stroke:#24508f}
.fault{fill:#f2b84b;opacity:.35}
.fault-pause,.fault-crash{fill:#d9534f}
.fault-member{fill:#999}
.rejected{fill:#c00}
.lane{fill:#f4f4f4}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}
</style></head><body>
<h1>tenure verify — seed {{.R.Seed}}</h1>
<p><span class="verdict {{if .OK}}ok{{else}}bad{{end}}">{{.Verdict}}</span>
 {{.R.Duration}}, {{.R.Nodes}} nodes, {{.R.Coordinator}}, TTL {{.R.TTL}}</p>
<p class="legend"><span style="background:#4a7fd4"></span>leadership (token)<span style="background:#f2b84b"></span>network fault<span style="background:#d9534f"></span>pause / crash<span style="background:#999"></span>member down<span style="background:#c00"></span>rejected write</p>
<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
{{range .Lanes}}<g class="lane-group" data-lane="{{.Label}}"><rect class="lane" x="90" y="{{.Y}}" width="1100" height="34"/><text x="4" y="{{.Y}}" dy="21">{{.Label}}</text></g>
{{end}}{{range .Rects}}<g><rect class="{{.Class}}" x="{{printf "%.1f" .X}}" y="{{printf "%.1f" .Y}}" width="{{printf "%.1f" .W}}" height="{{printf "%.1f" .H}}"><title>{{.Title}}</title></rect>{{if .Label}}{{if gt .W 18.0}}<text x="{{printf "%.1f" .X}}" dx="2" y="{{printf "%.1f" .Y}}" dy="17" fill="#fff">{{.Label}}</text>{{end}}{{end}}</g>
{{end}}{{range .Marks}}<rect class="{{.Class}}" x="{{printf "%.1f" .X}}" y="{{printf "%.1f" .Y}}" width="{{.W}}" height="{{.H}}"><title>{{.Title}}</title></rect>
{{end}}{{range .Ticks}}<text x="{{printf "%.1f" .X}}" y="{{.Y}}">{{.Label}}</text>
{{end}}</svg>
<h2>Summary</h2>
<pre>{{.Summary}}</pre>
<h2>Faults</h2>
<pre>{{range .R.Faults}}{{.Fault}}  {{.Holder}} {{.Note}}
{{end}}</pre>
</body></html>
`))
