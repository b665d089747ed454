package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/chaos"
	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/internal/display"
)

// The end-to-end tests run the tenure binary (built once by TestMain)
// against "tenure server" processes, with real time: leases of e2eTTL.
const e2eTTL = 2 * time.Second

// slack is what a loaded machine may add to a real-time upper bound: the
// end-to-end tests assert liveness ("within the TTL + slack"), never tight
// timings. Lower bounds ("not before the TTL") take no slack.
const slack = 5 * time.Second

// childModeEnv, when set, makes the test binary a helper command instead
// of running tests (see childMain).
const childModeEnv = "TENURE_E2E_CHILD"

// fenceURLEnv names the fenced resource the "fence" helper writes to.
const fenceURLEnv = "TENURE_E2E_FENCE_URL"

// childMain is the test binary as a command run by "tenure run".
//
//	fence: write to the fenced resource at $TENURE_E2E_FENCE_URL every
//	       20ms, presenting $TENURE_FENCING_TOKEN, with the body
//	       "$TENURE_HOLDER <pid>", until killed by SIGKILL.
func childMain(mode string) int {
	switch mode {
	case "fence":
		// Like a stubborn worker, it ignores SIGTERM and SIGINT: only the
		// SIGKILL tenure sends by the local deadline stops it.
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
		url := os.Getenv(fenceURLEnv)
		token := os.Getenv("TENURE_FENCING_TOKEN")
		body := fmt.Sprintf("%s %d", os.Getenv("TENURE_HOLDER"), os.Getpid())
		client := &http.Client{Timeout: time.Second}
		for {
			req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			req.Header.Set(fence.Header, token)
			if resp, err := client.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			time.Sleep(20 * time.Millisecond)
		}
	default:
		if code, ok := guardChildMain(mode); ok {
			return code
		}
		if code, ok := toldChildMain(mode); ok {
			return code
		}
		fmt.Fprintf(os.Stderr, "unknown %s %q\n", childModeEnv, mode)
		return 2
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a tenure process started by a test.
type proc struct {
	name     string
	cmd      *exec.Cmd
	out, err *syncBuffer
	done     chan struct{}
	code     int
}

// startProc starts tenure with args and env added to the test's
// environment. The process is killed at the end of the test if it still
// runs; its output is logged when the test fails.
func startProc(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, out: &syncBuffer{}, err: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(tenureBin, args...)
	p.cmd.Env = append(cleanEnv(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.err
	// A child that outlives tenure holding its output open (a guard left
	// stopped by a failed test, say) must not keep Wait, and the test's
	// cleanup, waiting for ever.
	p.cmd.WaitDelay = 10 * time.Second
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
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.cmd.Process.Kill()
		}
		<-p.done
		if t.Failed() {
			t.Logf("%s (%s): exit %d\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), p.code, p.out, p.err)
		}
	})
	return p
}

// cleanEnv is the test's environment without tenure's variables, so that
// a developer's TENURE_ENDPOINTS does not leak into the tests.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TENURE_") {
			env = append(env, kv)
		}
	}
	return env
}

func exitCodeOf(st *os.ProcessState) int {
	if st == nil {
		return -1
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(p.pid(), sig); err != nil {
		t.Fatalf("signal %s to %s: %v", sig, p.name, err)
	}
}

// wait waits up to d for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		t.Fatalf("%s still running after %s\nstderr:\n%s", p.name, d, p.err)
		return -1
	}
}

// result is a finished tenure invocation.
type result struct {
	code        int
	stdout      string
	stderr      string
	took        time.Duration
	description string
}

// runTenure runs tenure to completion (at most a minute).
func runTenure(t *testing.T, env []string, args ...string) result {
	t.Helper()
	began := time.Now()
	p := startProc(t, "tenure "+args[0], env, args...)
	code := p.wait(t, time.Minute)
	return result{code: code, stdout: p.out.String(), stderr: p.err.String(), took: time.Since(began),
		description: "tenure " + strings.Join(args, " ")}
}

// server is a "tenure server" process.
type server struct {
	*proc
	coord    []string // flags that name it: --endpoints URL
	endpoint string   // client URL
	http     string   // host:port of /metrics and /healthz
	dir      string
}

// startServer starts a one-member "tenure server" on free ports, with
// extra args, and waits until it is ready.
func startServer(t *testing.T, dir string, extra ...string) *server {
	t.Helper()
	peer, err := embedded.FreeLocalURLs(1)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"server", "--data-dir", dir, "--listen-client", "http://127.0.0.1:0",
		"--listen-peer", peer[0], "--http", "127.0.0.1:0"}, extra...)
	return awaitServer(t, startProc(t, "server", nil, args...), dir)
}

// awaitServer waits for p's ready line.
func awaitServer(t *testing.T, p *proc, dir string) *server {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(p.out.String(), "\n") {
			rest, ok := strings.CutPrefix(line, "tenure server ready: ")
			if !ok {
				continue
			}
			s := &server{proc: p, dir: dir}
			for _, field := range strings.Fields(rest) {
				k, v, _ := strings.Cut(field, "=")
				switch k {
				case "clients":
					s.endpoint = strings.Split(v, ",")[0]
				case "http":
					s.http = v
				}
			}
			if s.endpoint == "" {
				t.Fatalf("ready line %q has no clients=", line)
			}
			s.coord = []string{"--endpoints", s.endpoint}
			return s
		}
		if p.exited() {
			t.Fatalf("%s exited with %d before it was ready:\n%s", p.name, p.code, p.err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s not ready after 30s:\n%s", p.name, p.err)
	return nil
}

// stop stops the server with SIGTERM and checks that it exits 0 quickly.
func (s *server) stop(t *testing.T) {
	t.Helper()
	s.signal(t, syscall.SIGCONT)
	s.signal(t, syscall.SIGTERM)
	if code := s.wait(t, 10*time.Second); code != 0 {
		t.Errorf("server exit code after SIGTERM = %d; want 0\n%s", code, s.err)
	}
}

// write is one write the fenced resource accepted.
type write struct {
	seq    uint64
	token  uint64
	holder string
	pid    int
	at     time.Time
}

// resource is the fenced HTTP register of tenure verify (chaos.Register):
// the helper command writes "holder pid" to it with its token.
type resource struct {
	reg *chaos.Register
	url string
}

func startResource(t *testing.T) *resource {
	t.Helper()
	reg, err := chaos.StartRegister()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return &resource{reg: reg, url: "http://" + reg.Addr() + "/fenced"}
}

// env is the environment that makes the helper command write to r.
func (r *resource) env() []string {
	return []string{childModeEnv + "=fence", fenceURLEnv + "=" + r.url}
}

// first returns the first accepted write that matches ok, waiting up to d.
func (r *resource) first(t *testing.T, d time.Duration, what string, ok func(write) bool) write {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		for _, w := range r.accepted() {
			if ok(w) {
				return w
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no accepted write %s within %s", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// accepted returns the accepted writes, in order.
func (r *resource) accepted() []write {
	var out []write
	now, mono := time.Now(), chaos.Mono()
	for _, d := range r.reg.Decisions() {
		if !d.Accepted {
			continue
		}
		identity, pidText, _ := strings.Cut(d.Value, " ")
		pid, _ := strconv.Atoi(pidText)
		out = append(out, write{seq: d.Seq, token: d.Token, holder: nameOf(identity), pid: pid, at: now.Add(time.Duration(d.At - mono))})
	}
	return out
}

// rejections counts the writes rejected with token.
func (r *resource) rejections(token uint64) int {
	n := 0
	for _, d := range r.reg.Decisions() {
		if !d.Accepted && d.Token == token {
			n++
		}
	}
	return n
}

// nameOf is the --holder name of a holder identity ("name" or
// "name#instance").
func nameOf(identity string) string {
	name, _ := display.SplitIdentity(identity)
	return name
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state …: comm may contain spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

// waitDead waits up to d for process pid to die and returns how long it
// took.
func waitDead(t *testing.T, pid int, d time.Duration, what string) time.Duration {
	t.Helper()
	began := time.Now()
	for alive(pid) {
		if time.Since(began) > d {
			t.Fatalf("%s (pid %d) still alive after %s", what, pid, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(began)
}

// contender starts "tenure run" on the coordinator coord names (flags) for key as holder, running the helper
// command against r.
func contender(t *testing.T, coord []string, r *resource, key, holder string, extra ...string) *proc {
	t.Helper()
	args := append(append(append([]string{}, coord...), "run", "--key", key, "--ttl", e2eTTL.String(),
		"--holder", holder, "--kill-grace", "10s"), extra...)
	args = append(args, "--", selfBin)
	return startProc(t, holder, r.env(), args...)
}

// ctxFor is a context that ends with the test or after d.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// lines reads the non-empty lines of s.
func lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}
