package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Cases of the footprint benchmark.
const (
	caseResident = "resident while leading"
	caseIdleCPU  = "idle CPU while leading"
	caseWall     = "run -- true: wall"
	caseCPU      = "run -- true: CPU"
)

// Goals of the footprint benchmark (issue #24): tenure run beside every
// replica costs at most this much more than etcdctl lock.
const (
	goalResident = 1.5
	goalWall     = 1.5
)

// peerEtcdctl names etcdctl lock in the footprint report.
const peerEtcdctl = "etcdctl-lock"

// FootprintOptions configure Footprint.
type FootprintOptions struct {
	Target
	// Tenure is the tenure binary measured (tenure bench footprint gives
	// its own). Required.
	Tenure string
	// Etcdctl is etcd's etcdctl, the peer. Default "etcdctl", found in
	// PATH.
	Etcdctl string
	// Runs is how many times each implementation runs `true` as a whole
	// process, in pairs. Default 20.
	Runs int
	// Idle is how long both lead, idle, while their CPU time is counted;
	// their resident memory is read at its end. Default 1m.
	Idle time.Duration
	// TTL is the lease of both, whole seconds (etcdctl lock's --ttl).
	// Default 10s, the default of both.
	TTL time.Duration
}

func (o *FootprintOptions) defaults() error {
	if o.Etcdctl == "" {
		o.Etcdctl = "etcdctl"
	}
	if o.Runs == 0 {
		o.Runs = 20
	}
	if o.Idle == 0 {
		o.Idle = time.Minute
	}
	if o.TTL == 0 {
		o.TTL = 10 * time.Second
	}
	var errs []error
	if o.Postgres != "" || o.Kubeconfig != "" {
		errs = append(errs, fmt.Errorf("%w: footprint runs on etcd: its peer, etcdctl lock, is etcd's", ErrInvalidOptions))
	}
	if o.Tenure == "" {
		errs = append(errs, fmt.Errorf("%w: no tenure binary to measure", ErrInvalidOptions))
	}
	if o.Runs < 1 {
		errs = append(errs, fmt.Errorf("%w: --runs %d: want at least 1", ErrInvalidOptions, o.Runs))
	}
	if o.Idle < time.Second {
		errs = append(errs, fmt.Errorf("%w: --idle %s: want 1s or more", ErrInvalidOptions, o.Idle))
	}
	if o.TTL < 2*time.Second || o.TTL%time.Second != 0 {
		errs = append(errs, fmt.Errorf("%w: --ttl %s: want whole seconds, 2s or more (etcdctl lock's --ttl is in seconds)", ErrInvalidOptions, o.TTL))
	}
	return errors.Join(append(errs, o.validate())...)
}

// Footprint measures what `tenure run` costs beside every replica it wraps,
// next to `etcdctl lock` (etcd's own command that runs a command while
// holding a lock) on the same etcd: the resident memory and the CPU time of
// both while they lead, idle, side by side; and the wall and CPU time of
// `tenure run -- true` and `etcdctl lock -- true` as whole processes, run
// in pairs (which goes first alternates). It needs the tenure binary and
// etcdctl; Linux's /proc.
func Footprint(ctx context.Context, o FootprintOptions) (*Report, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	etcdctl, err := exec.LookPath(o.Etcdctl)
	if err != nil {
		return nil, fmt.Errorf("bench footprint: etcdctl %q: %w (Debian: apt-get install etcd-client; or name it with --etcdctl)", o.Etcdctl, err)
	}
	o.Etcdctl = etcdctl
	began := time.Now()
	dir, err := os.MkdirTemp("", "tenure-footprint-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	fp := footprinter{o: o, id: runID(), measured: filepath.Join(dir, "tenure")}
	if err := copyExecutable(fp.measured, o.Tenure); err != nil {
		return nil, err
	}
	lead, err := fp.leadSideBySide(ctx)
	if err != nil {
		return nil, err
	}
	runs, err := fp.runTrue(ctx)
	if err != nil {
		return nil, err
	}
	return fp.report(lead, runs, began), nil
}

// footprinter runs the footprint benchmark's processes.
type footprinter struct {
	o        FootprintOptions
	id       string // this run's name, in every key
	measured string // the copy of o.Tenure that runs
}

// copyExecutable copies the program at from to a new file to, executable.
// tenure is measured from a copy of its own: a binary that another process
// maps too (the benchmark itself, measuring its own binary) is resident
// more in each process that maps it (measured: 66 MiB instead of 48).
func copyExecutable(to, from string) error {
	src, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("bench footprint: the tenure binary: %w", err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return fmt.Errorf("bench footprint: copy the tenure binary: %w", err)
	}
	_, err = io.Copy(dst, src)
	if err := errors.Join(err, dst.Close()); err != nil {
		return fmt.Errorf("bench footprint: copy %s: %w", from, err)
	}
	return nil
}

// tenureArgs are the arguments of tenure run on key with command.
func (f *footprinter) tenureArgs(key string, command ...string) []string {
	return append([]string{"run", "--endpoints", strings.Join(f.o.Endpoints, ","), "--key", key,
		"--ttl", f.o.TTL.String(), "--"}, command...)
}

// etcdctlArgs are the arguments of etcdctl lock on name with command.
func (f *footprinter) etcdctlArgs(name string, command ...string) []string {
	return append([]string{"--endpoints", strings.Join(f.o.Endpoints, ","), "lock",
		"--ttl", fmt.Sprint(int(f.o.TTL / time.Second)), name, "--"}, command...)
}

// report puts the figures side by side.
func (f *footprinter) report(lead leadFigures, runs trueRuns, began time.Time) *Report {
	r := &Report{Benchmark: "footprint", Backend: "etcd", Failures: []string{}, Settings: map[string]any{
		"runs": f.o.Runs, "idle_ms": ms(f.o.Idle), "ttl_ms": ms(f.o.TTL),
	}}
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	t, g := lead.tenure, lead.guards
	r.Rows = append(r.Rows,
		Row{Impl: "tenure", Case: caseResident, Usage: &Usage{mib(t.rss + g.rss), "MiB"},
			Extra: map[string]float64{"tenure_process": mib(t.rss), "guard_process": mib(g.rss), "anonymous": mib(t.anon + g.anon)}},
		Row{Impl: peerEtcdctl, Case: caseResident, Usage: &Usage{mib(lead.etcdctl.rss), "MiB"},
			Extra: map[string]float64{"anonymous": mib(lead.etcdctl.anon)}},
		Row{Impl: "tenure", Case: caseIdleCPU, Usage: &Usage{lead.perMinute(t.cpu + g.cpu), "ms/min"},
			Extra: map[string]float64{"tenure_process": lead.perMinute(t.cpu), "guard_process": lead.perMinute(g.cpu)}},
		Row{Impl: peerEtcdctl, Case: caseIdleCPU, Usage: &Usage{lead.perMinute(lead.etcdctl.cpu), "ms/min"}},
	)
	r.addLatency("tenure", caseWall, runs.wall[0], nil, 0)
	r.addLatency(peerEtcdctl, caseWall, runs.wall[1], nil, 0)
	r.Rows = append(r.Rows,
		Row{Impl: "tenure", Case: caseCPU, Usage: &Usage{Summarize(runs.cpu[0]).P50, "ms"}},
		Row{Impl: peerEtcdctl, Case: caseCPU, Usage: &Usage{Summarize(runs.cpu[1]).P50, "ms"}},
	)
	r.compare("tenure", peerEtcdctl)
	r.addGoal(caseResident, goalResident)
	r.addGoal(caseWall, goalWall)
	r.Notes = append(r.Notes,
		fmt.Sprintf("%s: VmRSS (/proc/PID/status) at the end of the idle window, both leading on keys of their own; tenure's figure is its process and its guard's, summed (tenure_process, guard_process); neither's command is counted; anonymous: its RssAnon part (heap, stacks), the rest being the pages of the binary that it touched", caseResident),
		fmt.Sprintf("%s: user+system CPU time over the idle window (%s, after %s to settle), per minute, at /proc's 10 ms resolution", caseIdleCPU, f.o.Idle, leadSettle),
		fmt.Sprintf("%s: from starting the process until it exited, `true` having run as its command; CPU: user+system time of the process and of every process it waited for (tenure: its guard and true; etcdctl: true), median; %d runs each, in pairs, which goes first alternating", caseWall, f.o.Runs),
		"tenure's guard: "+lead.guardKind,
		"etcdctl: "+f.o.Etcdctl+" ("+etcdctlVersion(f.o.Etcdctl)+")",
		"tenure: "+f.o.Tenure+" (run from a copy of its own, which no other process maps)",
	)
	r.Elapsed = ms(time.Since(began))
	return r
}

// etcdctlVersion is the first line of `etcdctl version`, or why not.
func etcdctlVersion(path string) string {
	out, err := exec.Command(path, "version").Output()
	if err != nil {
		return fmt.Sprintf("version unknown: %v", err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return first
}
