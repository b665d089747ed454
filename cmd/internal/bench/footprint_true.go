package bench

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// trueRuns are the times of the runs of `-- true`: index 0 tenure run's,
// 1 etcdctl lock's.
type trueRuns struct {
	wall, cpu [2][]time.Duration
}

// runTrue runs `tenure run -- true` and `etcdctl lock -- true` as whole
// processes o.Runs times each, in pairs, each run on a key of its own;
// which goes first alternates from pair to pair.
func (f *footprinter) runTrue(ctx context.Context) (trueRuns, error) {
	var r trueRuns
	truePath, err := exec.LookPath("true")
	if err != nil {
		return r, fmt.Errorf("bench footprint: the command of the runs is true: %w", err)
	}
	for n := range f.o.Runs {
		key := fmt.Sprintf("footprint-%s-%d", f.id, n)
		for j := range 2 {
			i := (n + j) % 2
			path, args := f.measured, f.tenureArgs(key, truePath)
			if i == 1 {
				path, args = f.o.Etcdctl, f.etcdctlArgs(key+"-etcdctl", truePath)
			}
			wall, cpu, err := timeProcess(ctx, path, args)
			if err != nil {
				return r, err
			}
			r.wall[i], r.cpu[i] = append(r.wall[i], wall), append(r.cpu[i], cpu)
		}
		if (n+1)%10 == 0 || n+1 == f.o.Runs {
			f.o.progress("footprint: %d/%d pairs of runs of -- true", n+1, f.o.Runs)
		}
	}
	return r, nil
}

// timeProcess runs path with args to completion and returns how long it
// took and the user+system CPU time of the process and of every process
// it waited for (wait4 counts those in).
func timeProcess(ctx context.Context, path string, args []string) (wall, cpu time.Duration, err error) {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = footprintEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	err = cmd.Run()
	wall = time.Since(began)
	if err != nil {
		return 0, 0, fmt.Errorf("bench footprint: %s %s: %w\n%s", path, strings.Join(args, " "), err, out.String())
	}
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}
