package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure/internal/pgtest"
)

// measure runs every spec of plan with the tenure binary at tenureBin, one
// after the other, and returns the record. Progress (tenure bench's own,
// and a line per benchmark) goes to progress.
func measure(ctx context.Context, tenureBin string, progress io.Writer) (*record, error) {
	began := time.Now()
	rec := &record{Date: began.UTC().Format(time.RFC3339), Machine: thisMachine()}
	var err error
	if rec.Commit, rec.Dirty, err = gitHead(ctx); err != nil {
		return nil, err
	}
	srv, err := pgtest.Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL: %w", err)
	}
	defer srv.Stop()
	if rec.Machine.PostgreSQL, err = serverVersion(ctx, srv.DSN()); err != nil {
		return nil, err
	}
	for i, s := range plan {
		fmt.Fprintf(progress, "speed: [%d/%d] %s (load %.2f, %s so far)\n", i+1, len(plan), s.command(), load1(), time.Since(began).Round(time.Second))
		r, err := runSpec(ctx, tenureBin, s, srv, progress)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			// The page says so in place of the figures: a run that fails
			// on a loaded machine is a figure too.
			fmt.Fprintf(progress, "speed: %s did not finish: %v\n", s.command(), err)
			r.Error = err.Error()
		}
		rec.Runs = append(rec.Runs, r)
	}
	rec.ElapsedS = time.Since(began).Seconds()
	return rec, nil
}

// runSpec runs s, on a database of its own when on PostgreSQL.
func runSpec(ctx context.Context, tenureBin string, s spec, srv *pgtest.Server, progress io.Writer) (run, error) {
	r := run{Name: s.Name, Backend: s.Backend, Args: s.Args, LoadBefore: load1()}
	args := append([]string{"bench"}, s.Args...)
	args = append(args, "--json")
	if s.Backend == "postgres" {
		dsn, err := newDatabase(ctx, srv, s.Name)
		if err != nil {
			return r, err
		}
		args = append(args, "--postgres", dsn)
	}
	began := time.Now()
	out, err := runTenure(ctx, tenureBin, args, progress)
	r.ElapsedS = time.Since(began).Seconds()
	r.LoadAfter = load1()
	if err != nil {
		return r, err
	}
	if err := r.decode(out); err != nil {
		return r, fmt.Errorf("reading its --json: %w", err)
	}
	return r, nil
}

// runTenure runs tenureBin with args and returns its standard output; its
// standard error (bench's progress) goes to progress.
func runTenure(ctx context.Context, tenureBin string, args []string, progress io.Writer) ([]byte, error) {
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, tenureBin, args...)
	cmd.Stdout, cmd.Stderr = &out, io.MultiWriter(progress, &errOut)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w: %s", err, lastError(errOut.String()))
	}
	return out.Bytes(), nil
}

// lastError is tenure's error message in stderr: its last line that
// starts with "tenure:".
func lastError(stderr string) string {
	msg := "no message"
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "tenure:") {
			msg = l
		}
	}
	return msg
}

// databases counts the databases newDatabase created.
var databases atomic.Int64

// newDatabase creates an empty database on srv and returns a DSN for it.
func newDatabase(ctx context.Context, srv *pgtest.Server, name string) (string, error) {
	db := strings.ReplaceAll(fmt.Sprintf("speed_%d_%d_%s", os.Getpid(), databases.Add(1), name), "-", "_")
	conn, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
		return "", err
	}
	return pgtest.WithParams(srv.DSN(), map[string]string{"dbname": db}), nil
}

// serverVersion is PostgreSQL's server_version.
func serverVersion(ctx context.Context, dsn string) (string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var v string
	err = conn.QueryRow(ctx, "SHOW server_version").Scan(&v)
	return v, err
}

// gitHead is the commit checked out, and whether the tree has changes not
// committed outside docs/speed.md and docs/speed.json (which measure
// rewrites).
func gitHead(ctx context.Context) (commit string, dirty bool, err error) {
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false, fmt.Errorf("git rev-parse HEAD: %w", err)
	}
	status, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no", "--",
		".", ":(exclude)docs/speed.md", ":(exclude)docs/speed.json").Output()
	if err != nil {
		return "", false, fmt.Errorf("git status: %w", err)
	}
	return strings.TrimSpace(string(out)), len(bytes.TrimSpace(status)) > 0, nil
}

// thisMachine describes the host: cores, CPU model, kernel, and the Go
// that built this program (and, run by scripts/speed.sh, tenure).
func thisMachine() machine {
	m := machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = runtime.GOOS + " " + strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}
