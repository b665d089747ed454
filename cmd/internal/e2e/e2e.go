// Package e2e is what the end-to-end tests of the tenure command share:
// Main (the TestMain that builds the tenure binary, once for all the test
// packages (SharedTenure), and makes the test binary a helper command when
// tenure runs it), tenure
// processes (StartProc, RunTenure, StartServer, StartSupervised), the
// fenced resource their commands write to (StartResource) and waits with
// honest bounds (Slack).
package e2e

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

// TTL is the lease of the end-to-end tests: they run the tenure binary
// (built by Main) against "tenure server"
// processes, with real time.
const TTL = 2 * time.Second

// Slack is what a loaded machine may add to a real-time upper bound: the
// end-to-end tests assert liveness ("within the TTL + slack"), never tight
// timings. Lower bounds ("not before the TTL") take no slack.
const Slack = 5 * time.Second

// ChildModeEnv, when set, makes the test binary a helper command instead
// of running tests (see ChildMain).
const ChildModeEnv = "TENURE_E2E_CHILD"

// FenceURLEnv names the fenced resource the "fence" helper writes to.
const FenceURLEnv = "TENURE_E2E_FENCE_URL"

// ChildMain is the test binary as a command run by "tenure run".
//
//	fence: write to the fenced resource at $TENURE_E2E_FENCE_URL every
//	       20ms, presenting $TENURE_FENCING_TOKEN, with the body
//	       "$TENURE_HOLDER <pid>", until killed by SIGKILL.
func ChildMain(mode string, more ...func(mode string) (code int, ok bool)) int {
	switch mode {
	case "fence":
		// Like a stubborn worker, it ignores SIGTERM and SIGINT: only the
		// SIGKILL tenure sends by the local deadline stops it.
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
		url := os.Getenv(FenceURLEnv)
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
		for _, f := range append([]func(string) (int, bool){GuardChildMain}, more...) {
			if code, ok := f(mode); ok {
				return code
			}
		}
		fmt.Fprintf(os.Stderr, "unknown %s %q\n", ChildModeEnv, mode)
		return 2
	}
}

// SyncBuffer is a bytes.Buffer safe for concurrent use.
type SyncBuffer struct {
	Mu sync.Mutex
	B  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return s.B.Write(p)
}

func (s *SyncBuffer) String() string {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return s.B.String()
}

// Proc is a tenure process started by a test.
type Proc struct {
	Name     string
	Cmd      *exec.Cmd
	Out, Err *SyncBuffer
	Done     chan struct{}
	Code     int
}

// StartProc starts tenure with args and env added to the test's
// environment. The process is killed at the end of the test if it still
// runs; its output is logged when the test fails.
func StartProc(t *testing.T, name string, env []string, args ...string) *Proc {
	t.Helper()
	return StartProcVia(t, name, nil, env, args...)
}

// StartProcVia is StartProc with tenure started through the command via
// (unshare --time --boottime -60, say), which runs tenure's path and args
// after its own.
func StartProcVia(t *testing.T, name string, via, env []string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Name: name, Out: &SyncBuffer{}, Err: &SyncBuffer{}, Done: make(chan struct{})}
	argv := append(append(append([]string{}, via...), TenureBin), args...)
	p.Cmd = exec.Command(argv[0], argv[1:]...)
	p.Cmd.Env = append(CleanEnv(), env...)
	p.Cmd.Stdout, p.Cmd.Stderr = p.Out, p.Err
	// A child that outlives tenure holding its output open (a guard left
	// stopped by a failed test, say) must not keep Wait, and the test's
	// cleanup, waiting for ever.
	p.Cmd.WaitDelay = 10 * time.Second
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
			p.Cmd.Process.Signal(syscall.SIGCONT)
			p.Cmd.Process.Kill()
		}
		<-p.Done
		if t.Failed() {
			t.Logf("%s (%s): exit %d\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), p.Code, p.Out, p.Err)
		}
	})
	return p
}

// CleanEnv is the test's environment without tenure's variables, so that
// a developer's TENURE_ENDPOINTS does not leak into the tests.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TENURE_") {
			env = append(env, kv)
		}
	}
	return env
}

// SignalExit is the exit code of a process ended by signal sig, as a shell
// and tenure report it: 128+N (docs/exit-codes.md).
func SignalExit(sig syscall.Signal) int { return 128 + int(sig) }

// ExitCodeOf is the exit code of a finished process: SignalExit of the
// signal that ended it, if one did.
func ExitCodeOf(st *os.ProcessState) int {
	if st == nil {
		return -1
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return SignalExit(ws.Signal())
	}
	return st.ExitCode()
}

func (p *Proc) PID() int { return p.Cmd.Process.Pid }

func (p *Proc) Exited() bool {
	select {
	case <-p.Done:
		return true
	default:
		return false
	}
}

func (p *Proc) Signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(p.PID(), sig); err != nil {
		t.Fatalf("signal %s to %s: %v", sig, p.Name, err)
	}
}

// Wait waits up to d for the process to exit and returns its exit code.
func (p *Proc) Wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.Done:
		return p.Code
	case <-time.After(d):
		t.Fatalf("%s still running after %s\nstderr:\n%s", p.Name, d, p.Err)
		return -1
	}
}

// Result is a finished tenure invocation.
type Result struct {
	Code        int
	Stdout      string
	Stderr      string
	Took        time.Duration
	Description string
}

// RunTenure runs tenure to completion (at most a minute).
func RunTenure(t *testing.T, env []string, args ...string) Result {
	t.Helper()
	began := time.Now()
	p := StartProc(t, "tenure "+args[0], env, args...)
	code := p.Wait(t, time.Minute)
	return Result{Code: code, Stdout: p.Out.String(), Stderr: p.Err.String(), Took: time.Since(began),
		Description: "tenure " + strings.Join(args, " ")}
}

// Server is a "tenure server" process.
type Server struct {
	*Proc
	Coord    []string // flags that name it: --endpoints URL
	Endpoint string   // client URL
	HTTP     string   // host:port of /metrics and /healthz
	Dir      string
}

// StartServer starts a one-member "tenure server" on free ports, with
// extra args, and waits until it is ready.
func StartServer(t *testing.T, dir string, extra ...string) *Server {
	t.Helper()
	peer, err := embedded.FreeLocalURLs(1)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"server", "--data-dir", dir, "--listen-client", "http://127.0.0.1:0",
		"--listen-peer", peer[0], "--http", "127.0.0.1:0"}, extra...)
	return AwaitServer(t, StartProc(t, "server", nil, args...), dir)
}

// AwaitServer waits for p's ready line.
func AwaitServer(t *testing.T, p *Proc, dir string) *Server {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(p.Out.String(), "\n") {
			rest, ok := strings.CutPrefix(line, "tenure server ready: ")
			if !ok {
				continue
			}
			s := &Server{Proc: p, Dir: dir}
			for _, field := range strings.Fields(rest) {
				k, v, _ := strings.Cut(field, "=")
				switch k {
				case "clients":
					s.Endpoint = strings.Split(v, ",")[0]
				case "http":
					s.HTTP = v
				}
			}
			if s.Endpoint == "" {
				t.Fatalf("ready line %q has no clients=", line)
			}
			s.Coord = []string{"--endpoints", s.Endpoint}
			return s
		}
		if p.Exited() {
			t.Fatalf("%s exited with %d before it was ready:\n%s", p.Name, p.Code, p.Err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s not ready after 30s:\n%s", p.Name, p.Err)
	return nil
}

// Stop stops the server with SIGTERM and checks that it exits 0 quickly.
func (s *Server) Stop(t *testing.T) {
	t.Helper()
	s.Signal(t, syscall.SIGCONT)
	s.Signal(t, syscall.SIGTERM)
	if code := s.Wait(t, 10*time.Second); code != 0 {
		t.Errorf("server exit code after SIGTERM = %d; want 0\n%s", code, s.Err)
	}
}

// Write is one write the fenced resource accepted.
type Write struct {
	Seq    uint64
	Token  uint64
	Holder string
	PID    int
	At     time.Time
}

// Resource is the fenced HTTP register of tenure verify (chaos.Register):
// the helper command writes "holder pid" to it with its token.
type Resource struct {
	Reg *chaos.Register
	URL string
}

func StartResource(t *testing.T) *Resource {
	t.Helper()
	reg, err := chaos.StartRegister()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return &Resource{Reg: reg, URL: "http://" + reg.Addr() + "/fenced"}
}

// Env is the environment that makes the helper command write to r.
func (r *Resource) Env() []string {
	return []string{ChildModeEnv + "=fence", FenceURLEnv + "=" + r.URL}
}

// First returns the first accepted write that matches ok, waiting up to d.
func (r *Resource) First(t *testing.T, d time.Duration, what string, ok func(Write) bool) Write {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		for _, w := range r.Accepted() {
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

// Accepted returns the accepted writes, in order.
func (r *Resource) Accepted() []Write {
	var out []Write
	now, mono := time.Now(), chaos.Mono()
	for _, d := range r.Reg.Decisions() {
		if !d.Accepted {
			continue
		}
		identity, pidText, _ := strings.Cut(d.Value, " ")
		pid, _ := strconv.Atoi(pidText)
		out = append(out, Write{Seq: d.Seq, Token: d.Token, Holder: NameOf(identity), PID: pid, At: now.Add(time.Duration(d.At - mono))})
	}
	return out
}

// Rejections counts the writes rejected with token.
func (r *Resource) Rejections(token uint64) int {
	n := 0
	for _, d := range r.Reg.Decisions() {
		if !d.Accepted && d.Token == token {
			n++
		}
	}
	return n
}

// NameOf is the --holder name of a holder identity ("name" or
// "name#instance").
func NameOf(identity string) string {
	name, _ := display.SplitIdentity(identity)
	return name
}

// Alive reports whether process pid exists and is not a zombie.
func Alive(pid int) bool {
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

// WaitDead waits up to d for process pid to die and returns how long it
// Took.
func WaitDead(t *testing.T, pid int, d time.Duration, what string) time.Duration {
	t.Helper()
	began := time.Now()
	for Alive(pid) {
		if time.Since(began) > d {
			t.Fatalf("%s (pid %d) still alive after %s", what, pid, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(began)
}

// Contender starts "tenure run" on the coordinator coord names (flags) for key as holder, running the helper
// command against r.
func Contender(t *testing.T, coord []string, r *Resource, key, holder string, extra ...string) *Proc {
	t.Helper()
	args := append(append(append([]string{}, coord...), "run", "--key", key, "--ttl", TTL.String(),
		"--holder", holder, "--kill-grace", "10s"), extra...)
	args = append(args, "--", SelfBin)
	return StartProc(t, holder, r.Env(), args...)
}

// CtxFor is a context that ends with the test or after d.
func CtxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// Lines reads the non-empty lines of s.
func Lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// ReadFile is the text of the file at path, or "" if it cannot be read.
func ReadFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// WaitFor polls cond every 10ms for up to d.
func WaitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
