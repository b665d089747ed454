package e2e

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

// GuardCoord is a real coordinator for the supervisor's end-to-end tests:
// flags names it directly; proxied(t) names it through a TCP proxy that a
// test can cut.
type GuardCoord struct {
	Name    string
	Flags   []string
	Proxied func(t *testing.T) ([]string, *tcpproxy.Proxy)
}

// GuardCoords are Debian's etcd binary and PostgreSQL.
func GuardCoords(t *testing.T) []GuardCoord {
	etcd := GuardCoord{Name: "etcd-binary"}
	etcd.Flags = []string{"--endpoints", etcdbin.Start(t)}
	etcd.Proxied = func(t *testing.T) ([]string, *tcpproxy.Proxy) {
		u, _ := url.Parse(etcd.Flags[1])
		p := NewProxy(t, u.Host)
		return []string{"--endpoints", "http://" + p.Addr()}, p
	}
	pg := GuardCoord{Name: "postgres"}
	pg.Flags = PostgresCoord(t)
	pg.Proxied = func(t *testing.T) ([]string, *tcpproxy.Proxy) {
		cfg, err := PgconnTarget(pg.Flags[1])
		if err != nil {
			t.Fatal(err)
		}
		p := NewProxy(t, cfg)
		host, port, _ := net.SplitHostPort(p.Addr())
		return []string{"--postgres", pgtest.WithParams(pg.Flags[1], map[string]string{"host": host, "port": port})}, p
	}
	return []GuardCoord{etcd, pg}
}

// PgconnTarget is the host:port a PostgreSQL DSN (URL or key=value) names.
func PgconnTarget(dsn string) (string, error) {
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

func NewProxy(t *testing.T, target string) *tcpproxy.Proxy {
	t.Helper()
	p, err := tcpproxy.New("tcp", target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// Supervised is a "tenure run" whose command reports its pid and lease
// file (the command is `sh -c SCRIPT`, and SCRIPT may read $OUT).
type Supervised struct {
	*Proc
	Out string
}

// StartSupervised starts tenure run on coord for key with a 2s TTL, the
// command sh -c script (with $OUT a file it may write), and env.
func StartSupervised(t *testing.T, coord []string, key string, env []string, script string, extra ...string) *Supervised {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	args := append(append(append([]string{}, coord...), "run", "--key", key, "--ttl", TTL.String()), extra...)
	args = append(args, "--", "sh", "-c", script)
	env = append(env, "OUT="+out, "SELF="+SelfBin, "TENURE="+TenureBin)
	return &Supervised{Proc: StartProc(t, "run "+key, env, args...), Out: out}
}

// FenceScript makes the command the fenced-register writer (ChildMain's
// "fence" mode) after writing "PID LEASE_FILE" to $OUT.
const FenceScript = `echo "$$ $TENURE_LEASE_FILE" > "$OUT.tmp" && mv "$OUT.tmp" "$OUT"; exec "$SELF"`

// Started waits for the command's "PID LEASE_FILE" line in $OUT.
func (s *Supervised) Started(t *testing.T) (pid int, leaseFile string) {
	t.Helper()
	for began := time.Now(); time.Since(began) < 20*time.Second; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(s.Out)
		if f := strings.Fields(string(b)); err == nil && len(f) == 2 {
			pid, _ = strconv.Atoi(f[0])
			return pid, f[1]
		}
		if s.Exited() {
			t.Fatalf("tenure exited %d before its command started:\n%s", s.Code, s.Err)
		}
	}
	t.Fatalf("command did not start within 20s:\n%s", s.Err)
	return 0, ""
}

// Writing waits for a command of s to have a write accepted by res, and
// returns that command's pid and lease file and its first accepted write.
// A command that ends before it writes (on a loaded machine, a renewal
// overdue before the command got going ends its term) is passed over for
// the next one tenure starts, whose line replaces it in $OUT.
func (s *Supervised) Writing(t *testing.T, res *Resource) (pid int, leaseFile string, first Write) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		pid, leaseFile = s.Started(t)
		for _, w := range res.Accepted() {
			if w.PID == pid {
				return pid, leaseFile, w
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no accepted write from the command (pid %d) within 20s:\n%s", pid, s.Err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BootClock converts the test's time.Now readings to the boot clock.
type BootClock struct {
	Mono time.Time
	Boot boottime.Instant
}

func NewBootClock() BootClock { return BootClock{Mono: time.Now(), Boot: boottime.Now()} }

func (c BootClock) At(t time.Time) boottime.Instant { return c.Boot.Add(t.Sub(c.Mono)) }

// Uptime is a reading of /proc/uptime ("12345.67": seconds of
// CLOCK_BOOTTIME, to the hundredth), as a shell command takes it with
// `read up _ < /proc/uptime`, on the boot clock, rounded up: the instant
// read was at or before it, by less than UptimeResolution.
func Uptime(t *testing.T, s string) boottime.Instant {
	t.Helper()
	sec, cs, ok := strings.Cut(strings.TrimSpace(s), ".")
	n, err := strconv.ParseInt(sec+cs, 10, 64)
	if !ok || len(cs) != 2 || err != nil {
		t.Fatalf("uptime %q", s)
	}
	return boottime.Instant((n + 1) * int64(UptimeResolution))
}

// UptimeResolution is the resolution of /proc/uptime.
const UptimeResolution = 10 * time.Millisecond

// ProcState is the state letter of pid in /proc ('T' stopped, 'Z' zombie),
// or 0 if it is gone.
func ProcState(pid int) byte {
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

// ParentOf is pid's parent (for a command of tenure run: its guard).
func ParentOf(t *testing.T, pid int) int {
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

// WritesBy returns the accepted writes of pid.
func (r *Resource) WritesBy(pid int) []Write {
	var out []Write
	for _, w := range r.Accepted() {
		if w.PID == pid {
			out = append(out, w)
		}
	}
	return out
}

// GuardChildMain is ChildMain's modes for the guard's tests:
//
//	nokill:   exec tenure ($TENURE_E2E_TENURE) with the arguments after
//	          the test binary's, without CAP_KILL (dropped from the
//	          bounding set): a root tenure and guard that may signal only
//	          their own user's processes.
//	survivor: ignore SIGTERM, become real and saved uid 65534 (effective
//	          root), so that a guard without CAP_KILL may not signal it;
//	          write its pid to $OUT; after SurvivorFor, become root
//	          again (signallable) and wait, at most a minute.
func GuardChildMain(mode string) (code int, ok bool) {
	switch mode {
	case "nokill":
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_KILL, 0, 0, 0); err != nil {
			fmt.Fprintln(os.Stderr, "drop CAP_KILL:", err)
			return 1, true
		}
		bin := os.Getenv("TENURE_E2E_TENURE")
		env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, ChildModeEnv+"=") })
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
		time.Sleep(SurvivorFor - time.Since(began))
		if err := syscall.Setresuid(0, 0, 0); err != nil {
			fmt.Fprintln(os.Stderr, "setresuid:", err)
			return 1, true
		}
		time.Sleep(time.Minute)
		return 0, true
	}
	return 0, false
}

// SurvivorFor is how long the survivor helper cannot be signalled by a
// guard without CAP_KILL: longer than 10s, so that a guard that gave up
// killing after a fixed time would let it live.
const SurvivorFor = 12 * time.Second

// StartNoKill starts tenure with args, as root without CAP_KILL, and env
// added to the test's environment, as StartProc does.
func StartNoKill(t *testing.T, name string, env []string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Name: name, Out: &SyncBuffer{}, Err: &SyncBuffer{}, Done: make(chan struct{})}
	p.Cmd = exec.Command(SelfBin, args...)
	p.Cmd.Env = append(CleanEnv(), append(env, ChildModeEnv+"=nokill", "TENURE_E2E_TENURE="+TenureBin)...)
	p.Cmd.Stdout, p.Cmd.Stderr = p.Out, p.Err
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.Cmd.Wait()
		p.Code = ExitCodeOf(p.Cmd.ProcessState)
		close(p.Done)
	}()
	t.Cleanup(func() {
		if !p.Exited() {
			p.Cmd.Process.Kill()
		}
		<-p.Done
		if t.Failed() {
			t.Logf("%s (%s): exit %d\nstderr:\n%s", name, strings.Join(args, " "), p.Code, p.Err)
		}
	})
	return p
}
