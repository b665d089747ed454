package cli

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/freeport"
)

// deployDoc is docs/deploy.md.
const deployDoc = "../../../docs/deploy.md"

// deployFailover is the bound docs/deploy.md gives for a worker on another
// host to start after the leading host dies, with --ttl 10s.
const deployFailover = 13 * time.Second

// deployBlocks returns the fenced blocks of docs/deploy.md marked for the
// test (a line "<!-- deploy-test: NAME -->" right before the block), by
// NAME, as lines.
func deployBlocks(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(deployDoc)
	if err != nil {
		t.Fatal(err)
	}
	marker := regexp.MustCompile(`^<!-- deploy-test: (.+) -->$`)
	blocks := map[string][]string{}
	name, in := "", false
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case !in && marker.MatchString(l):
			name = marker.FindStringSubmatch(l)[1]
		case strings.HasPrefix(l, "```") && name != "":
			if in {
				name = ""
			}
			in = !in
		case in:
			blocks[name] = append(blocks[name], l)
		}
	}
	for _, want := range []string{"certs", "install", "jobs.env", "server.env 10.0.0.1", "server.env 10.0.0.2", "server.env 10.0.0.3"} {
		if len(blocks[want]) == 0 {
			t.Fatalf("docs/deploy.md has no block marked %q", want)
		}
	}
	return blocks
}

// recipe is docs/deploy.md's three hosts on this machine: host N is
// 127.0.0.N instead of 10.0.0.N, with a directory of its own for
// /etc/tenure and /var/lib/tenure, and admin the directory the
// certificates are made in.
type recipe struct {
	t      *testing.T
	admin  string
	ports  map[string]string
	blocks map[string][]string
	hosts  [3]*deployHost
}

// deployHost is one host of the recipe: its two units' processes.
type deployHost struct {
	n              int
	dir            string
	server, worker *e2e.Proc
	down           bool      // the test stopped or killed the worker: no restart
	exitedAt       time.Time // when the worker was first seen exited
}

var hostPort = regexp.MustCompile(`(10\.0\.0\.\d|127\.0\.0\.1):(\d+)`)

// mapFor maps the recipe's addresses and paths onto this machine for host
// n: every 10.0.0.N:PORT (and 127.0.0.1:PORT, host n's loopback) becomes
// 127.0.0.N with a free port, the same for the same address everywhere;
// 10.0.0.N becomes 127.0.0.N; /etc/tenure and /var/lib/tenure become the
// host's directories, %H (systemd's host name) hostN.
func (r *recipe) mapFor(n int, s string) string {
	s = hostPort.ReplaceAllStringFunc(s, func(a string) string {
		host, port, _ := strings.Cut(a, ":")
		key := a
		if host == "127.0.0.1" {
			host = fmt.Sprintf("10.0.0.%d", n)
			key = host + ":lo" + port
		}
		if r.ports[key] == "" {
			ls, err := freeport.Listen(1)
			if err != nil {
				r.t.Fatal(err)
			}
			r.ports[key] = strconv.Itoa(ls[0].Addr().(*net.TCPAddr).Port)
			ls[0].Close()
		}
		return host + ":" + r.ports[key]
	})
	dir := ""
	if n > 0 {
		dir = r.hosts[n-1].dir
	}
	return strings.NewReplacer("10.0.0.", "127.0.0.", "/etc/tenure", filepath.Join(dir, "etc"),
		"/var/lib/tenure", filepath.Join(dir, "var"), "%H", fmt.Sprintf("host%d", n)).Replace(s)
}

// makeCerts runs the recipe's certificate commands in r.admin.
func (r *recipe) makeCerts() {
	t := r.t
	for _, l := range r.blocks["certs"] {
		words, err := shellWords(l)
		if err != nil || len(words) == 0 {
			continue
		}
		args, ok := tenureArgs(words)
		if !ok {
			t.Fatalf("certs block line %q: want tenure commands only", l)
		}
		args = mapArgs(args, func(a string) string { return r.mapFor(0, a) })
		if len(args) > 1 && args[0] == "certs" && args[1] == "member" {
			// Three "hosts" on one machine: a connection from 127.0.0.2
			// to 127.0.0.3 leaves from 127.0.0.1, and etcd checks a
			// peer's certificate against the address a connection comes
			// from. On real hosts each leaves from its own address.
			args = append(args, "--host", "127.0.0.1")
		}
		cmd := exec.Command(e2e.TenureBin, args...)
		cmd.Dir = r.admin
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", l, err, out)
		}
	}
}

// install runs the recipe's install block for host h, with m=mN: its
// install commands, into the host's directories (as this user: no
// useradd, no -o). The tenure binary is the test's.
func (r *recipe) install(h *deployHost) {
	t := r.t
	vars := map[string]string{}
	for _, l := range r.blocks["install"] {
		words, err := shellWords(l)
		if err != nil || len(words) == 0 {
			continue
		}
		if k, _, ok := strings.Cut(words[0], "="); ok && len(words) == 1 {
			vars[k] = fmt.Sprintf("m%d", h.n)
			continue
		}
		if words[0] != "install" {
			continue // useradd
		}
		mode, dir, files := uint64(0o644), false, []string{}
		for i := 1; i < len(words); i++ {
			switch words[i] {
			case "-d":
				dir = true
			case "-m":
				i++
				mode, _ = strconv.ParseUint(words[i], 8, 32)
			case "-o":
				i++
			default:
				w := words[i]
				for k, v := range vars {
					w = strings.ReplaceAll(w, "$"+k, v)
				}
				files = append(files, r.mapFor(h.n, w))
			}
		}
		if err := installFiles(r.admin, dir, os.FileMode(mode), files); err != nil {
			t.Fatalf("%s (host %d): %v", l, h.n, err)
		}
	}
}

// installFiles does what install(1) does with dir (-d), mode (-m) and
// files, relative to wd: make the directories, or copy the source to the
// destination. The tenure binary is not copied: the test runs its own.
func installFiles(wd string, dir bool, mode os.FileMode, files []string) error {
	if dir {
		for _, d := range files {
			if err := os.MkdirAll(d, mode); err != nil {
				return err
			}
		}
		return nil
	}
	if len(files) != 2 {
		return fmt.Errorf("want a source and a destination, got %q", files)
	}
	if files[0] == "tenure" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(wd, files[0]))
	if err != nil {
		return err
	}
	return os.WriteFile(files[1], b, mode)
}

// envFile is the environment an EnvironmentFile= of a unit gives host n:
// the recipe's block for that file.
func (r *recipe) envFile(n int, path string) []string {
	path = strings.TrimPrefix(path, "-")
	name := filepath.Base(path)
	lines := r.blocks[name]
	if lines == nil {
		lines = r.blocks[fmt.Sprintf("%s 10.0.0.%d", name, n)]
	}
	if lines == nil {
		r.t.Fatalf("docs/deploy.md has no block for %s on host %d", path, n)
	}
	var env []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			env = append(env, r.mapFor(n, l))
		}
	}
	return env
}

// unitCommand is a unit's ExecStart for host n, mapped, with the
// environment systemd gives it: Environment=, then EnvironmentFile=, whose
// settings win.
func (r *recipe) unitCommand(file string, n int) ([]string, []string) {
	t := r.t
	u := parseUnit(t, filepath.Join(examplesDir, "systemd", file))
	s := u["Service"]
	args, err := shellWords(strings.Join(s["ExecStart"], " "))
	if err != nil || len(args) < 2 || args[0] != "/usr/local/bin/tenure" {
		t.Fatalf("%s: ExecStart %q: want /usr/local/bin/tenure (%v)", file, s["ExecStart"], err)
	}
	var env []string
	for _, e := range s["Environment"] {
		env = append(env, r.mapFor(n, e))
	}
	for _, f := range s["EnvironmentFile"] {
		env = append(env, r.envFile(n, f)...)
	}
	return mapArgs(args[1:], func(a string) string { return r.mapFor(n, a) }), env
}

// startServerUnit starts host h's tenure-server.service.
func (r *recipe) startServerUnit(h *deployHost) {
	args, env := r.unitCommand("tenure-server.service", h.n)
	h.server = e2e.StartProc(r.t, fmt.Sprintf("host%d server", h.n), env, args...)
}

// startWorkerUnit starts host h's tenure-run-jobs.service, its worker.sh
// the test's fencing writer to res.
func (r *recipe) startWorkerUnit(h *deployHost, res *e2e.Resource) {
	args, env := r.unitCommand("tenure-run-jobs.service", h.n)
	if args[len(args)-1] != "/usr/local/bin/worker.sh" {
		r.t.Fatalf("tenure-run-jobs.service runs %q; want /usr/local/bin/worker.sh", args)
	}
	args[len(args)-1] = e2e.SelfBin
	h.worker = e2e.StartProc(r.t, fmt.Sprintf("host%d worker", h.n), append(env, res.Env()...), args...)
}

// await waits up to d for cond, restarting meanwhile, as the worker unit's
// Restart=always and RestartSec= say, every worker that exited on its own
// (69 when the coordinator did not answer in time), unless its exit status
// is in RestartPreventExitStatus=.
func (r *recipe) await(d time.Duration, what string, cond func() bool, res *e2e.Resource) {
	t := r.t
	t.Helper()
	s := parseUnit(t, filepath.Join(examplesDir, "systemd", "tenure-run-jobs.service"))["Service"]
	delay, err := time.ParseDuration(strings.Join(s["RestartSec"], ""))
	if err != nil || strings.Join(s["Restart"], "") != "always" {
		t.Fatalf("tenure-run-jobs.service: Restart=%q RestartSec=%q; want always and a duration", s["Restart"], s["RestartSec"])
	}
	prevent := strings.Fields(strings.Join(s["RestartPreventExitStatus"], " "))
	e2e.WaitFor(t, d, what, func() bool {
		for _, h := range r.hosts {
			if h.down || !h.worker.Exited() || slices.Contains(prevent, strconv.Itoa(h.worker.Code)) {
				continue
			}
			if h.exitedAt.IsZero() {
				h.exitedAt = time.Now()
			} else if time.Since(h.exitedAt) >= delay {
				t.Logf("host%d's worker exited %d; restarted (Restart=always)", h.n, h.worker.Code)
				h.exitedAt = time.Time{}
				r.startWorkerUnit(h, res)
			}
		}
		return cond()
	})
}

// awaitMembers waits until every host's member is ready, starting again,
// as tenure-server.service's Restart=on-failure says, a member that
// exited (a new cluster's member that found no majority within
// --start-timeout, on a loaded machine).
func (r *recipe) awaitMembers() {
	r.t.Helper()
	e2e.WaitFor(r.t, 3*time.Minute, "every member ready", func() bool {
		ready := 0
		for _, h := range r.hosts {
			switch {
			case strings.Contains(h.server.Out.String(), "tenure server ready: "):
				ready++
			case h.server.Exited() && h.server.Code != 0:
				r.t.Logf("host%d's member exited %d; restarted (Restart=on-failure)", h.n, h.server.Code)
				r.startServerUnit(h)
			}
		}
		return ready == len(r.hosts)
	})
}

// healthy reports whether host h's member answers 200 on /health, on the
// --http of its unit.
func (r *recipe) healthy(h *deployHost) bool {
	addr := r.mapFor(h.n, "127.0.0.1:9479")
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// killHost SIGKILLs every process of host h at once: its member, its
// tenure run and everything that descends from it (the guard, the worker).
func killHost(t *testing.T, h *deployHost) {
	t.Helper()
	pids := append([]int{h.server.PID()}, descendants(h.worker.PID())...)
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	h.server.Wait(t, 10*time.Second)
	h.worker.Wait(t, 10*time.Second)
	for _, pid := range pids {
		e2e.WaitDead(t, pid, 10*time.Second, fmt.Sprintf("host%d process", h.n))
	}
}

// descendants returns pid and every process whose parent chain leads to
// it.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); err == nil && i > 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 1 {
				parent[p], _ = strconv.Atoi(f[1])
			}
		}
	}
	out := []int{pid}
	for changed := true; changed; {
		changed = false
		for p, pp := range parent {
			if !containsInt(out, p) && containsInt(out, pp) {
				out, changed = append(out, p), true
			}
		}
	}
	return out
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestDeployRecipe runs docs/deploy.md's three hosts as written, on this
// machine (127.0.0.1, .2 and .3 for 10.0.0.1, .2 and .3; loopback, so
// tenure server would not insist on TLS: the recipe's TLS is used all the
// same): the certificates from its own tenure certs commands, its install
// commands, each host's tenure-server.service and tenure-run-jobs.service
// ExecStart with their environment files. One worker runs, with no warning
// from any process; the leading host is killed whole (SIGKILL of its
// member, tenure run, guard and worker): a worker of another host runs
// within the documented bound, with a greater token; the host comes back:
// its member rejoins (healthy: a linearizable read through the cluster)
// and, once the other workers stop, its worker leads with a greater token.
func TestDeployRecipe(t *testing.T) {
	t.Parallel()
	r := &recipe{t: t, admin: t.TempDir(), ports: map[string]string{}, blocks: deployBlocks(t)}
	for i := range r.hosts {
		r.hosts[i] = &deployHost{n: i + 1, dir: t.TempDir()}
	}
	r.makeCerts()
	res := e2e.StartResource(t)
	for _, h := range r.hosts {
		r.install(h)
		r.startServerUnit(h)
	}
	r.awaitMembers()
	for _, h := range r.hosts {
		if s := e2e.AwaitServer(t, h.server, ""); !strings.HasPrefix(s.Endpoint, fmt.Sprintf("https://127.0.0.%d:", h.n)) {
			t.Fatalf("host%d's member serves %s; want https:// on 127.0.0.%d", h.n, s.Endpoint, h.n)
		}
		r.startWorkerUnit(h, res)
	}
	r.await(time.Minute, "a write by any host", func() bool { return len(res.Accepted()) > 0 }, res)
	first := res.Accepted()[0]
	leader := r.hosts[first.Holder[len("host")]-'1']
	var procs []*e2e.Proc
	for _, h := range r.hosts {
		procs = append(procs, h.server, h.worker)
	}
	noWarnings(t, procs...)

	leader.down = true
	killHost(t, leader)
	killed := time.Now()
	r.await(deployFailover+e2e.Slack, "a write by another host with a greater token", func() bool {
		return slices.ContainsFunc(res.Accepted(), func(w e2e.Write) bool { return w.Holder != first.Holder && w.Token > first.Token })
	}, res)
	next := res.First(t, 0, "by another host with a greater token", func(w e2e.Write) bool {
		return w.Holder != first.Holder && w.Token > first.Token
	})
	t.Logf("%s led with token %d; killed whole, %s ran with token %d after %s (documented: within %s)",
		first.Holder, first.Token, next.Holder, next.Token, next.At.Sub(killed).Round(time.Millisecond), deployFailover)

	r.startServerUnit(leader)
	e2e.AwaitServer(t, leader.server, "")
	e2e.WaitFor(t, 30*time.Second, fmt.Sprintf("host%d's member to rejoin (/health 200)", leader.n), func() bool { return r.healthy(leader) })
	leader.down = false
	r.startWorkerUnit(leader, res)
	nextHost := r.hosts[next.Holder[len("host")]-'1']
	for _, h := range r.hosts {
		if h != leader && h != nextHost {
			h.down = true
			h.worker.Signal(t, syscall.SIGTERM)
			h.worker.Wait(t, 30*time.Second)
		}
	}
	nextHost.down = true
	nextHost.worker.Signal(t, syscall.SIGTERM)
	r.await(10*time.Second+2*e2e.Slack, "a write by the host that came back", func() bool {
		return slices.ContainsFunc(res.Accepted(), func(w e2e.Write) bool { return w.Holder == first.Holder && w.Token > next.Token })
	}, res)
	back := res.First(t, 0, "by the host that came back", func(w e2e.Write) bool {
		return w.Holder == first.Holder && w.Token > next.Token
	})
	t.Logf("host%d came back: its member rejoined, its worker leads with token %d", leader.n, back.Token)
}

// TestCertsFiles: tenure certs writes keys with mode 0600, refuses to
// overwrite a file (exit 2, the file unchanged), and refuses a member
// without a --host and a certificate without the CA.
func TestCertsFiles(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "certs")
	if res := e2e.RunTenure(t, nil, "certs", "client", "--name", "w", "--dir", dir); res.Code != ExitUsage || !strings.Contains(res.Stderr, "tenure certs ca") {
		t.Errorf("%s without a CA: exit %d; want %d naming tenure certs ca\n%s", res.Description, res.Code, ExitUsage, res.Stderr)
	}
	if res := e2e.RunTenure(t, nil, "certs", "ca", "--dir", dir); res.Code != 0 {
		t.Fatalf("%s: exit %d\n%s", res.Description, res.Code, res.Stderr)
	}
	before, err := os.ReadFile(filepath.Join(dir, "ca-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(dir, "ca-key.pem")); st.Mode().Perm() != 0o600 {
		t.Errorf("ca-key.pem mode %v; want 0600", st.Mode().Perm())
	}
	res := e2e.RunTenure(t, nil, "certs", "ca", "--dir", dir)
	after, _ := os.ReadFile(filepath.Join(dir, "ca-key.pem"))
	if res.Code != ExitUsage || !strings.Contains(res.Stderr, "exists") || string(after) != string(before) {
		t.Errorf("%s again: exit %d, key unchanged %v; want %d, the key unchanged\n%s", res.Description, res.Code, string(after) == string(before), ExitUsage, res.Stderr)
	}
	if res := e2e.RunTenure(t, nil, "certs", "member", "--name", "m1", "--dir", dir); res.Code != ExitUsage || !strings.Contains(res.Stderr, "host") {
		t.Errorf("%s: exit %d; want %d naming --host\n%s", res.Description, res.Code, ExitUsage, res.Stderr)
	}
}
