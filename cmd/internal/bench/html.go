package bench

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// plot is one CDF chart: the series of one case.
type plot struct {
	Case   string
	Width  int
	Height int
	Lines  []line
	XTicks []tick
	YTicks []tick
}

// line is one implementation's CDF as SVG points.
type line struct {
	Impl    string
	Color   string
	Points  string
	LegendY int
}

type tick struct {
	Pos   float64
	Label string
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

const (
	plotW, plotH           = 640, 320
	padL, padR, padT, padB = 60, 150, 20, 40
)

// plots returns one CDF chart per case, one line per implementation; the x
// axis runs from 0 to the largest sample of the case, in milliseconds.
func (r *Report) plots() []plot {
	var cases []string
	for _, s := range r.Series {
		if !slices.Contains(cases, s.Case) {
			cases = append(cases, s.Case)
		}
	}
	var out []plot
	for _, c := range cases {
		p := plot{Case: c, Width: plotW, Height: plotH}
		var xmax float64
		for _, s := range r.Series {
			if s.Case == c {
				for _, v := range s.Samples {
					xmax = max(xmax, v)
				}
			}
		}
		step, n := niceStep(xmax)
		xmax = step * float64(n)
		iw, ih := float64(plotW-padL-padR), float64(plotH-padT-padB)
		x := func(v float64) float64 { return padL + v/xmax*iw }
		y := func(q float64) float64 { return padT + (1-q)*ih }
		for i := range n + 1 {
			v := step * float64(i)
			p.XTicks = append(p.XTicks, tick{x(v), strconv.FormatFloat(v, 'f', -1, 64)})
		}
		for i := range 5 {
			p.YTicks = append(p.YTicks, tick{y(float64(i) / 4), fmt.Sprintf("%d%%", i*25)})
		}
		for _, s := range r.Series {
			if s.Case != c || len(s.Samples) == 0 {
				continue
			}
			v := slices.Clone(s.Samples)
			slices.Sort(v)
			var b strings.Builder
			fmt.Fprintf(&b, "%.1f,%.1f", x(v[0]), y(0))
			for i, d := range v {
				fmt.Fprintf(&b, " %.1f,%.1f %.1f,%.1f", x(d), y(float64(i)/float64(len(v))), x(d), y(float64(i+1)/float64(len(v))))
			}
			n := len(p.Lines)
			p.Lines = append(p.Lines, line{Impl: s.Impl, Color: palette[n%len(palette)], Points: b.String(), LegendY: padT + 10 + 20*n})
		}
		out = append(out, p)
	}
	return out
}

// niceStep returns a tick step of 1, 2 or 5 times a power of ten, and how
// many steps (3 to 10) cover 0 to max: round numbers on the axis (0, 500,
// 1000, 1500) rather than quarters of the largest sample (0, 552, 1103).
func niceStep(max float64) (step float64, n int) {
	if !(max > 0) {
		return 1, 1
	}
	raw := max / 5
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	step = 10 * pow
	for _, m := range []float64{1, 2, 5} {
		if m*pow >= raw {
			step = m * pow
			break
		}
	}
	// Round away binary noise (0.1+0.2), then count the steps to max.
	step, _ = strconv.ParseFloat(strconv.FormatFloat(step, 'g', 6, 64), 64)
	return step, int(math.Ceil(max/step - 1e-9))
}

// pageHTML is the report page's template, parsed by WriteHTML: package
// initialisation does no work for it in every tenure process (tenure run
// links this package too).
const pageHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>tenure bench {{.R.Benchmark}} on {{.R.Backend}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.failure { color: #b00; font-weight: bold; }
svg text { font-size: 12px; }
code { background: #f3f3f3; padding: 0.1em 0.3em; }
</style></head>
<body>
<h1>tenure bench {{.R.Benchmark}} on {{.R.Backend}}</h1>
{{with .R.Command}}<p>Command: <code>{{.}}</code></p>{{end}}
<p>Settings:{{range $k, $v := .R.Settings}} {{$k}} <b>{{$v}}</b>;{{end}}</p>
{{range .R.Verdicts}}<p class="verdict"><b>{{.}}</b></p>{{end}}
{{range .R.Goals}}<p class="goal"><b>{{.}}</b></p>{{end}}
<table id="figures">
<thead><tr>{{range index .Table 0}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range slice .Table 1}}<tr class="row">{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</tbody>
</table>
{{range .R.Failures}}<p class="failure">FAILURE: {{.}}</p>{{end}}
{{range .R.Notes}}<p class="note">{{.}}</p>{{end}}
{{with .R.Recommendation}}<p id="recommendation"><b>Recommendation:</b> {{.}}</p>{{end}}
{{range .Plots}}
<h2>Latency CDF{{with .Case}} — {{.}}{{end}}</h2>
<svg class="cdf" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
{{range .XTicks}}<line x1="{{.Pos}}" y1="20" x2="{{.Pos}}" y2="280" stroke="#eee"/><text x="{{.Pos}}" y="296" text-anchor="middle">{{.Label}}</text>{{end}}
{{range .YTicks}}<line x1="60" y1="{{.Pos}}" x2="490" y2="{{.Pos}}" stroke="#eee"/><text x="54" y="{{.Pos}}" text-anchor="end" dominant-baseline="middle">{{.Label}}</text>{{end}}
<text x="275" y="314" text-anchor="middle">milliseconds</text>
{{range .Lines}}<polyline class="cdf-line" data-impl="{{.Impl}}" fill="none" stroke="{{.Color}}" stroke-width="2" points="{{.Points}}"/>
<rect x="500" y="{{.LegendY}}" width="12" height="12" fill="{{.Color}}"/><text class="legend" x="518" y="{{.LegendY}}" dy="10">{{.Impl}}</text>
{{end}}</svg>
{{end}}
</body></html>
`

// WriteHTML writes the report as a self-contained HTML page: the table, and
// a latency CDF per case with one line per implementation, in inline SVG (no
// scripts, no external resources).
func (r *Report) WriteHTML(w io.Writer) error {
	page, err := template.New("page").Parse(pageHTML)
	if err != nil {
		return err
	}
	return page.Execute(w, struct {
		R     *Report
		Table [][]string
		Plots []plot
	}{r, r.table(), r.plots()})
}
