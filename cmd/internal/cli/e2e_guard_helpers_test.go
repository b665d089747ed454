package cli

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/internal/boottime"
	"github.com/tenure-dev/tenure/internal/etcdbin"
	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
)

// guardCoord is a real coordinator for the supervisor's end-to-end tests:
// flags names it directly; proxied(t) names it through a TCP proxy that a
// test can cut.
type guardCoord struct {
	name    string
	flags   []string
	proxied func(t *testing.T) ([]string, *tcpproxy.Proxy)
}

// guardCoords are Debian's etcd binary and PostgreSQL.
func guardCoords(t *testing.T) []guardCoord {
	etcd := guardCoord{name: "etcd-binary"}
	etcd.flags = []string{"--endpoints", etcdbin.Start(t)}
	etcd.proxied = func(t *testing.T) ([]string, *tcpproxy.Proxy) {
		u, _ := url.Parse(etcd.flags[1])
		p := newProxy(t, u.Host)
		return []string{"--endpoints", "http://" + p.Addr()}, p
	}
	pg := guardCoord{name: "postgres"}
	pg.flags = postgresCoord(t)
	pg.proxied = func(t *testing.T) ([]string, *tcpproxy.Proxy) {
		cfg, err := pgconnTarget(pg.flags[1])
		if err != nil {
			t.Fatal(err)
		}
		p := newProxy(t, cfg)
		host, port, _ := net.SplitHostPort(p.Addr())
		return []string{"--postgres", pgtest.WithParams(pg.flags[1], map[string]string{"host": host, "port": port})}, p
	}
	return []guardCoord{etcd, pg}
}

// pgconnTarget is the host:port a PostgreSQL DSN (URL or key=value) names.
func pgconnTarget(dsn string) (string, error) {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		return u.Host, nil
	}
	host, port := "127.0.0.1", "5432"
	for _, kv := range strings.Fields(dsn) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "host":
			host = v
		case "port":
			port = v
		}
	}
	if strings.HasPrefix(host, "/") {
		return "", fmt.Errorf("DSN %q: a Unix socket cannot be proxied", dsn)
	}
	return net.JoinHostPort(host, port), nil
}

func newProxy(t *testing.T, target string) *tcpproxy.Proxy {
	t.Helper()
	p, err := tcpproxy.New("tcp", target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// supervised is a "tenure run" whose command reports its pid and lease
// file (the command is `sh -c SCRIPT`, and SCRIPT may read $OUT).
type supervised struct {
	*proc
	out string
}

// startSupervised starts tenure run on coord for key with a 2s TTL, the
// command sh -c script (with $OUT a file it may write), and env.
func startSupervised(t *testing.T, coord []string, key string, env []string, script string, extra ...string) *supervised {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	args := append(append(append([]string{}, coord...), "run", "--key", key, "--ttl", e2eTTL.String()), extra...)
	args = append(args, "--", "sh", "-c", script)
	env = append(env, "OUT="+out, "SELF="+selfBin, "TENURE="+tenureBin)
	return &supervised{proc: startProc(t, "run "+key, env, args...), out: out}
}

// fenceScript makes the command the fenced-register writer (childMain's
// "fence" mode) after writing "PID LEASE_FILE" to $OUT.
const fenceScript = `echo "$$ $TENURE_LEASE_FILE" > "$OUT.tmp" && mv "$OUT.tmp" "$OUT"; exec "$SELF"`

// started waits for the command's "PID LEASE_FILE" line in $OUT.
func (s *supervised) started(t *testing.T) (pid int, leaseFile string) {
	t.Helper()
	for began := time.Now(); time.Since(began) < 20*time.Second; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(s.out)
		if f := strings.Fields(string(b)); err == nil && len(f) == 2 {
			pid, _ = strconv.Atoi(f[0])
			return pid, f[1]
		}
		if s.exited() {
			t.Fatalf("tenure exited %d before its command started:\n%s", s.code, s.err)
		}
	}
	t.Fatalf("command did not start within 20s:\n%s", s.err)
	return 0, ""
}

// bootClock converts the test's time.Now readings to the boot clock.
type bootClock struct {
	mono time.Time
	boot boottime.Instant
}

func newBootClock() bootClock { return bootClock{mono: time.Now(), boot: boottime.Now()} }

func (c bootClock) at(t time.Time) boottime.Instant { return c.boot.Add(t.Sub(c.mono)) }

// procState is the state letter of pid in /proc ('T' stopped, 'Z' zombie),
// or 0 if it is gone.
func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	p, err := guard.ParseStat(b)
	if err != nil {
		return 0
	}
	return p.State
}

// parentOf is pid's parent (for a command of tenure run: its guard).
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	p, err := guard.ParseStat(b)
	if err != nil {
		t.Fatal(err)
	}
	return p.PPid
}

// writesBy returns the accepted writes of pid.
func (r *resource) writesBy(pid int) []write {
	var out []write
	for _, w := range r.accepted() {
		if w.pid == pid {
			out = append(out, w)
		}
	}
	return out
}

// guardChildMain is childMain's modes for the guard's tests:
//
//	nokill:   exec tenure ($TENURE_E2E_TENURE) with the arguments after
//	          the test binary's, without CAP_KILL (dropped from the
//	          bounding set): a root tenure and guard that may signal only
//	          their own user's processes.
//	survivor: ignore SIGTERM, become real and saved uid 65534 (effective
//	          root), so that a guard without CAP_KILL may not signal it;
//	          write its pid to $OUT; after survivorFor, become root
//	          again (signallable) and wait, at most a minute.
func guardChildMain(mode string) (code int, ok bool) {
	switch mode {
	case "nokill":
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_KILL, 0, 0, 0); err != nil {
			fmt.Fprintln(os.Stderr, "drop CAP_KILL:", err)
			return 1, true
		}
		bin := os.Getenv("TENURE_E2E_TENURE")
		env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, childModeEnv+"=") })
		fmt.Fprintln(os.Stderr, syscall.Exec(bin, append([]string{"tenure"}, os.Args[1:]...), env))
		return 1, true
	case "survivor":
		began := time.Now()
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		if err := syscall.Setresuid(65534, 0, 65534); err != nil {
			fmt.Fprintln(os.Stderr, "setresuid:", err)
			return 1, true
		}
		out := os.Getenv("OUT")
		if err := os.WriteFile(out+".tmp", []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil || os.Rename(out+".tmp", out) != nil {
			return 1, true
		}
		time.Sleep(survivorFor - time.Since(began))
		if err := syscall.Setresuid(0, 0, 0); err != nil {
			fmt.Fprintln(os.Stderr, "setresuid:", err)
			return 1, true
		}
		time.Sleep(time.Minute)
		return 0, true
	}
	return 0, false
}

// survivorFor is how long the survivor helper cannot be signalled by a
// guard without CAP_KILL: longer than the 10s after which the guard used to
// stop killing.
const survivorFor = 12 * time.Second

// startNoKill starts tenure with args, as root without CAP_KILL, and env
// added to the test's environment, as startProc does.
func startNoKill(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, out: &syncBuffer{}, err: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(selfBin, args...)
	p.cmd.Env = append(cleanEnv(), append(env, childModeEnv+"=nokill", "TENURE_E2E_TENURE="+tenureBin)...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.err
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.cmd.Wait()
		p.code = exitCodeOf(p.cmd.ProcessState)
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			p.cmd.Process.Kill()
		}
		<-p.done
		if t.Failed() {
			t.Logf("%s (%s): exit %d\nstderr:\n%s", name, strings.Join(args, " "), p.code, p.err)
		}
	})
	return p
}
