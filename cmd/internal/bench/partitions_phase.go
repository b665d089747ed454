package bench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// A PhaseError is a Partitions run that did not finish a phase: which phase,
// how far it got, how fast partitions were starting, and what the members
// logged (the coordinator's errors among them).
type PhaseError struct {
	// Phase is "cold start", "join", "planned leave" or "crash".
	Phase string
	// Waited is how long the phase ran before it gave up.
	Waited time.Duration
	// Running is how many of the group's Partitions ran at the end; Most
	// is the most one member ran, Cap ⌈P/N⌉.
	Running, Partitions, Most, Cap int
	// Rate and RecentRate are the partitions started per second over the
	// phase and over its last 10 seconds.
	Rate, RecentRate float64
	// CPU is the cores this process (members, and etcd when in process)
	// used over the phase; Load is the host's 1-minute load average at the
	// end ("" where unknown). Members starved of CPU renew late.
	CPU  float64
	Load string
	// Warnings are the members' warnings and errors, most frequent first,
	// each with its count and last error.
	Warnings []string
}

// Error says all of it on a few lines.
func (e *PhaseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d partitions running after %s (most %d on one member, cap %d); partitions started %.0f/s over the phase, %.0f/s over its last 10s; this process used %.2f cores (load average %s)",
		e.Phase, e.Running, e.Partitions, e.Waited.Round(time.Millisecond), e.Most, e.Cap, e.Rate, e.RecentRate, e.CPU, cmp.Or(e.Load, "unknown"))
	if len(e.Warnings) == 0 {
		b.WriteString("; the members logged no warning")
	}
	for _, w := range e.Warnings {
		b.WriteString("\n  member log: " + w)
	}
	return b.String()
}

// progress follows a phase: partitions started over time, for the rate, and
// a progress line every progressEvery.
type progress struct {
	m       *measurer
	phase   string
	began   time.Time
	started int64 // m.started at the beginning
	samples []startSample
	printed time.Time
	cpu0    time.Duration // cpuTime at the beginning
	cpuLast time.Duration // cpuTime at the last progress line
	warned  int64         // the members' warnings at the beginning
}

// startSample is partitions started by a moment.
type startSample struct {
	at      time.Time
	started int64
}

const progressEvery = 5 * time.Second

func (m *measurer) follow(phase string) *progress {
	now, cpu := time.Now(), cpuTime()
	return &progress{m: m, phase: phase, began: now, started: m.started.Load(), printed: now, cpu0: cpu, cpuLast: cpu, warned: m.warnings.total.Load()}
}

// tick records a sample and prints a progress line when one is due.
func (p *progress) tick() {
	now := time.Now()
	p.samples = append(p.samples, startSample{now, p.m.started.Load()})
	if now.Sub(p.printed) >= progressEvery {
		cpu := cpuTime()
		cores := (cpu - p.cpuLast).Seconds() / now.Sub(p.printed).Seconds()
		p.printed, p.cpuLast = now, cpu
		fmt.Fprintf(p.m.o.Progress, "bench: %s: %d of %d partitions running after %s, %.0f started/s, %d member warnings; this process used %.2f cores (load average %s)\n",
			p.phase, p.m.running.Load(), p.m.o.Partitions, now.Sub(p.began).Round(time.Second), p.rate(10*time.Second),
			p.m.warnings.total.Load(), cores, cmp.Or(loadAverage(), "unknown"))
	}
}

// done prints, when the members logged warnings during the phase, the
// most frequent of the run so far: a phase that finished slowly says why.
func (p *progress) done() {
	if p.m.warnings.total.Load() == p.warned {
		return
	}
	for _, w := range p.m.warnings.summary(5) {
		fmt.Fprintf(p.m.o.Progress, "bench: %s: member log: %s\n", p.phase, w)
	}
}

// rate is partitions started per second over the last window (the whole
// phase when window is 0).
func (p *progress) rate(window time.Duration) float64 {
	now := time.Now()
	from := startSample{p.began, p.started}
	for _, s := range p.samples {
		if window == 0 || now.Sub(s.at) <= window {
			break
		}
		from = s
	}
	if d := now.Sub(from.at).Seconds(); d > 0 {
		return float64(p.m.started.Load()-from.started) / d
	}
	return 0
}

// fail is the PhaseError of a phase that gave up now.
func (p *progress) fail(ctx context.Context) error {
	_, most := p.m.owners()
	e := &PhaseError{
		Phase: p.phase, Waited: time.Since(p.began),
		Running: int(p.m.running.Load()), Partitions: p.m.o.Partitions, Most: most,
		Cap:  (p.m.o.Partitions + len(p.m.nodes) - 1) / max(len(p.m.nodes), 1),
		Rate: p.rate(0), RecentRate: p.rate(10 * time.Second), Warnings: p.m.warnings.summary(5),
		CPU: (cpuTime() - p.cpu0).Seconds() / time.Since(p.began).Seconds(), Load: loadAverage(),
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w (%w)", e, err)
	}
	return e
}

// loadAverage is the host's 1-minute load average (Linux's /proc/loadavg),
// or "" where it cannot be read.
func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return ""
}
