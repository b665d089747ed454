package chaos

import (
	"fmt"
	"html/template"
)

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"f1":  func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"add": func(a, b float64) float64 { return a + b },
}).Parse(pageHTML))

const pageHTML = `{{define "shape"}}{{if eq .Kind "rect"}}<rect class="{{.Class}}" x="{{f1 .X}}" y="{{f1 .Y}}" width="{{f1 .W}}" height="{{f1 .H}}">{{with .Title}}<title>{{.}}</title>{{end}}</rect>
{{- else if eq .Kind "circle"}}<circle class="{{.Class}}" cx="{{f1 .X}}" cy="{{f1 .Y}}" r="{{f1 .W}}">{{with .Title}}<title>{{.}}</title>{{end}}</circle>
{{- else if eq .Kind "line"}}<line class="{{.Class}}" x1="{{f1 .X}}" y1="{{f1 .Y}}" x2="{{f1 .X}}" y2="{{f1 (add .Y .H)}}">{{with .Title}}<title>{{.}}</title>{{end}}</line>
{{- else if eq .Kind "polygon"}}<polygon class="{{.Class}}" points="{{.Points}}">{{with .Title}}<title>{{.}}</title>{{end}}</polygon>
{{- else if eq .Kind "note"}}<a class="{{.Class}}" href="{{.Href}}"><title>{{.Title}}</title><text x="{{f1 .X}}" y="{{f1 .Y}}">{{.Text}}</text></a>{{end}}
{{- with .Label}}<text class="{{$.LabelClass}}" x="{{f1 $.LX}}" y="{{f1 $.LY}}">{{.}}</text>{{end}}{{end -}}
<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>tenure verify — seed {{.R.Seed}}</title>
<style>
body{font:14px system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px;margin:0 0 4px}
h2{font-size:16px;margin:20px 0 6px}
.verdict{font-weight:bold;padding:4px 8px;border-radius:4px;display:inline-block}
.ok{background:#d7f5dd;color:#175c26}.bad{background:#fbd9d9;color:#8a1111}.inconclusive{background:#fdebc8;color:#7a4b00}
pre{background:#f6f6f6;padding:12px;overflow-x:auto}
svg text{font:11px system-ui,sans-serif}
.lane{fill:#f4f4f4}
.lane-label{font-weight:bold}
.term{fill:#4a7fd4;stroke:#24508f}
.term-label{fill:#fff}
.fault{opacity:.45}
.fault-label{fill:#222;font-size:10px}
{{.FamilyCSS}}
.renewal{fill:#24508f}
.renewal-failed{fill:#fff;stroke:#b03a2e;stroke-width:1.2}
.deadline{stroke:#222;stroke-width:1;stroke-dasharray:3,2}
.write-accepted{fill:#1e8449}
.write-rejected{fill:#e67e22;stroke:#a04000;stroke-width:.5}
.write-unknown{fill:none;stroke:#555;stroke-width:1}
.violation-line{stroke:#c0002a;stroke-width:2}
.violation-mark{fill:#c0002a;stroke:#000;stroke-width:.8}
.violation-n{fill:#c0002a;font-weight:bold}
.axis,.tick{stroke:#444}
.tick-label{text-anchor:middle}
.axis-title{text-anchor:middle;font-style:italic}
#violations li{margin:3px 0}
.late-note text{fill:#a04000;font-size:10px;text-decoration:underline;paint-order:stroke;stroke:#fff;stroke-width:3px}
.lane-label-link{cursor:help}
.write-rejected.late{stroke:#000;stroke-width:.8}
#glossary dt{font-weight:bold;margin-top:8px}
#glossary dd{margin:2px 0 0 16px;max-width:60em}
#glossary dt:target,#glossary dt:target+dd{background:#fff3c4}
</style></head><body>
<h1>tenure verify — seed {{.R.Seed}}</h1>
<p><span class="verdict {{.VerdictClass}}">{{.Verdict}}</span>
 {{.R.Duration}}, {{.R.Nodes}} nodes, {{.R.Coordinator}}, TTL {{.R.TTL}}</p>
<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{{f1 .Width}}" height="{{f1 .Height}}" viewBox="0 0 {{f1 .Width}} {{f1 .Height}}">
<g id="legend">{{range .Legend}}<g class="legend-item" transform="translate({{f1 .X}},{{f1 .Y}})">{{if .Swatch.Kind}}{{template "shape" .Swatch}}<text x="20" y="4">{{.Label}}</text>{{else}}<text x="0" y="4">{{.Label}}</text>{{end}}</g>{{end}}</g>
{{range .Lanes}}<g class="lane-group" data-lane="{{.Label}}" data-node="{{.Node}}"><rect class="lane" x="{{f1 $.LeftPad}}" y="{{f1 .Y}}" width="1100" height="44"/><a class="lane-label-link" href="#glossary-lanes"><title>{{.Title}}</title><text class="lane-label" x="4" y="{{f1 (add .Y 26)}}">{{.Label}}</text></a></g>
{{end}}{{range .Shapes}}{{template "shape" .}}
{{end}}{{range .Violations}}<g class="violation" id="violation-{{.N}}" data-node="{{.Node}}" data-lane="{{.Lane}}" data-at="{{.At}}" data-x="{{f1 .X}}" data-check="{{.Check}}"><title>[{{.N}}] {{.Check}} at {{.At}} on {{.Lane}}: {{.Txt}}</title><line class="violation-line" x1="{{f1 .X}}" y1="{{f1 .Y1}}" x2="{{f1 .X}}" y2="{{f1 .Y2}}"/><polygon class="violation-mark" points="{{.Diamond}}"/><text class="violation-n" x="{{f1 (add .X 6)}}" y="{{f1 .Y1}}">{{.N}}</text></g>
{{end}}<line class="axis" x1="{{f1 $.LeftPad}}" y1="{{f1 .AxisY}}" x2="{{f1 .PlotRight}}" y2="{{f1 .AxisY}}"/>
{{range .Ticks}}{{template "shape" .}}
{{end}}<text class="axis-title" x="{{f1 .AxisMid}}" y="{{f1 (add .AxisY 36)}}">seconds since start</text>
</svg>
{{if .Items}}<h2>Safety violations</h2>
<ul id="violations">{{range .Items}}<li class="violation-item"{{if .N}} data-n="{{.N}}"{{end}}>{{if .N}}<b>[{{.N}}]</b> {{end}}<b>{{.Check}}</b>{{if .At}} at {{.At}}{{else}}, over the whole history{{end}}{{with .Lane}} on {{.}}{{end}}: {{.Text}}{{if .MoreCount}} … and {{.MoreCount}} more (see --json){{end}}</li>
{{end}}</ul>{{end}}
<h2>Summary</h2>
<pre>{{.Summary}}</pre>
<h2>Faults</h2>
<pre>{{range .FaultLines}}{{.}}
{{end}}</pre>
<section id="glossary"><h2>Glossary</h2>
<dl>{{range .Glossary}}<dt id="{{.ID}}">{{.Term}}</dt><dd>{{.Text}}</dd>
{{end}}</dl></section>
</body></html>
`
