package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/freeport"
)

// composeService is a service of examples/container/compose.yaml: the
// fields the tests read.
type composeService struct {
	Image       string            `json:"image"`
	NetworkMode string            `json:"network_mode"`
	Restart     string            `json:"restart"`
	Command     []string          `json:"command"`
	Environment map[string]string `json:"environment"`
	DependsOn   json.RawMessage   `json:"depends_on"`
	Healthcheck *struct {
		Test []string `json:"test"`
	} `json:"healthcheck"`
}

// dependsOn is the service's depends_on, in its long form: service →
// condition (the short form, a list, means "service_started").
func (s composeService) dependsOn(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	if len(s.DependsOn) == 0 {
		return out
	}
	var list []string
	if json.Unmarshal(s.DependsOn, &list) == nil {
		for _, name := range list {
			out[name] = "service_started"
		}
		return out
	}
	var long map[string]struct {
		Condition string `json:"condition"`
	}
	if err := json.Unmarshal(s.DependsOn, &long); err != nil {
		t.Fatalf("depends_on %s: %v", s.DependsOn, err)
	}
	for name, d := range long {
		out[name] = d.Condition
	}
	return out
}

// parseCompose reads examples/container/compose.yaml.
func parseCompose(t *testing.T) map[string]composeService {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(examplesDir, "container", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]composeService `json:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	if len(compose.Services) < 3 {
		t.Fatalf("compose.yaml has services %v; want a server and two workers", compose.Services)
	}
	return compose.Services
}

// checkCompose checks what compose.yaml promises before it runs: each
// service runs a tenure command with real flags and environment twins, two
// workers contend under tenure run, each worker waits for the server's
// healthcheck and is restarted when it exits, and it returns the server's
// name.
func checkCompose(t *testing.T, services map[string]composeService) (server string) {
	t.Helper()
	h := helpCache{}
	runs := 0
	for name, s := range services {
		if s.Image != "tenure:dev" {
			t.Errorf("service %s: image %q; want tenure:dev, the Dockerfile's", name, s.Image)
		}
		var env []string
		for k, v := range s.Environment {
			env = append(env, k+"="+v)
		}
		h.checkInvocation(t, "compose.yaml service "+name, s.Command, env)
		switch s.Command[0] {
		case "server":
			server = name
		case "run":
			runs++
		}
	}
	if runs < 2 || server == "" {
		t.Fatalf("compose.yaml runs %d workers under tenure run and server %q; want two contenders and a server", runs, server)
	}
	if hc := services[server].Healthcheck; hc == nil || len(hc.Test) < 2 || hc.Test[0] != "CMD" || hc.Test[1] != "tenure" {
		t.Errorf("service %s: healthcheck %+v; want one that runs tenure (CMD form: the image has no shell)", server, hc)
	}
	for name, s := range services {
		if s.Command[0] != "run" {
			continue
		}
		if cond := s.dependsOn(t)[server]; cond != "service_healthy" {
			t.Errorf("service %s: depends_on %s with condition %q; want service_healthy, so that it starts once the coordinator answers", name, server, cond)
		}
		if s.Restart != "unless-stopped" && s.Restart != "always" {
			t.Errorf("service %s: restart %q; want unless-stopped, so that a worker whose tenure run exits (69: no coordinator yet) is started again", name, s.Restart)
		}
	}
	return server
}

// composeHost maps compose.yaml's addresses and paths onto this machine:
// every service's host name and 0.0.0.0 become 127.0.0.1, each port named
// with 127.0.0.1 becomes a free one, and /home/nonroot (the image's home,
// where the volume goes) a temporary directory.
func composeHost(t *testing.T, services map[string]composeService) func(string) string {
	t.Helper()
	var pairs []string
	for name := range services {
		pairs = append(pairs, name+":", "127.0.0.1:")
	}
	pairs = append(pairs, "0.0.0.0:", "127.0.0.1:", "/home/nonroot", t.TempDir())
	hosts := strings.NewReplacer(pairs...)
	ports := map[string]string{}
	addr := regexp.MustCompile(`127\.0\.0\.1:(\d+)`)
	return func(s string) string {
		return addr.ReplaceAllStringFunc(hosts.Replace(s), func(a string) string {
			p := strings.TrimPrefix(a, "127.0.0.1:")
			if ports[p] == "" {
				ls, err := freeport.Listen(1)
				if err != nil {
					t.Fatal(err)
				}
				ports[p] = strconv.Itoa(ls[0].Addr().(*net.TCPAddr).Port)
				ls[0].Close()
			}
			return "127.0.0.1:" + ports[p]
		})
	}
}

// serviceProc is a compose service run as a process: its command with the
// tenure binary, its environment, and tenure first on PATH (the image's
// tenure, which a worker's command names).
func serviceProc(t *testing.T, name string, s composeService, host func(string) string) *e2e.Proc {
	t.Helper()
	env := []string{"PATH=" + filepath.Dir(e2e.TenureBin) + ":" + os.Getenv("PATH")}
	for k, v := range s.Environment {
		env = append(env, k+"="+host(v))
	}
	var args []string
	for _, a := range s.Command {
		args = append(args, host(a))
	}
	return e2e.StartProc(t, name, env, args...)
}

// awaitHealthy runs the server's healthcheck, as compose does, until it
// passes.
func awaitHealthy(t *testing.T, s composeService, host func(string) string) {
	t.Helper()
	var res e2e.Result
	e2e.WaitFor(t, 30*time.Second, "the healthcheck to pass", func() bool {
		res = e2e.RunTenure(t, nil, mapArgs(s.Healthcheck.Test[2:], host)...)
		return res.Code == 0
	})
}

func mapArgs(args []string, f func(string) string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = f(a)
	}
	return out
}

// grantLine matches a line of tenure watch naming a holder and its token.
var grantLine = regexp.MustCompile(`holder \S+ .*token (\d+)`)

// leadingWorker waits up to d for a worker other than not whose command (a
// tenure watch) prints the key held with a token above above, and returns
// that worker and the token.
func leadingWorker(t *testing.T, workers map[string]*e2e.Proc, not string, above uint64, d time.Duration) (string, uint64) {
	t.Helper()
	var name string
	var token uint64
	e2e.WaitFor(t, d, fmt.Sprintf("a worker's command to print the key held with a token above %d", above), func() bool {
		for n, w := range workers {
			for _, m := range grantLine.FindAllStringSubmatch(w.Out.String(), -1) {
				tok, _ := strconv.ParseUint(m[1], 10, 64)
				if n != not && tok > above {
					name, token = n, tok
					return true
				}
			}
		}
		return false
	})
	return name, token
}

// noWarnings fails t if a process logged a warning at start: before
// tenure run campaigns, or tenure server reports its member ready (what
// they warn about later is the run's, not the configuration's).
func noWarnings(t *testing.T, procs ...*e2e.Proc) {
	t.Helper()
	for _, p := range procs {
		for _, l := range e2e.Lines(p.Err.String()) {
			if strings.Contains(l, "level=WARN") || strings.Contains(l, `"level":"WARN"`) {
				t.Errorf("%s warned at start: %s", p.Name, l)
			}
			if strings.Contains(l, "campaigning") || strings.Contains(l, "member ready") {
				break
			}
		}
	}
}

// TestComposeRuns: examples/container/compose.yaml parses and checks out
// (checkCompose), and runs: its services' commands, with their environment,
// as processes of the built tenure (no docker here: compose's network is
// 127.0.0.1 with free ports). The server's healthcheck fails before the
// server runs and passes once it does; the workers, started then, log no
// warning; one leads and its command stays up (the watch prints the key
// held, and no worker's command exits, for seconds); after that worker is killed
// (docker compose kill: SIGKILL), the other one leads with a greater token.
func TestComposeRuns(t *testing.T) {
	t.Parallel()
	services := parseCompose(t)
	serverName := checkCompose(t, services)
	host := composeHost(t, services)
	server := services[serverName]
	hc := server.Healthcheck != nil && len(server.Healthcheck.Test) > 2
	if hc {
		if res := e2e.RunTenure(t, nil, mapArgs(server.Healthcheck.Test[2:], host)...); res.Code == 0 {
			t.Fatalf("the healthcheck %s passes with no server running; want it to fail", res.Description)
		}
	}
	srv := serviceProc(t, serverName, server, host)
	if hc {
		awaitHealthy(t, server, host)
	} else { // checkCompose has failed the test; run the rest anyway
		e2e.AwaitServer(t, srv, "")
	}
	workers := map[string]*e2e.Proc{}
	for name, s := range services {
		if s.Command[0] == "run" {
			workers[name] = serviceProc(t, name, s, host)
		}
	}
	leader, token := leadingWorker(t, workers, "", 0, 30*time.Second)
	time.Sleep(3 * time.Second)
	for name, w := range workers {
		if w.Exited() {
			t.Fatalf("worker %s exited %d; want it to run (lead or campaign)", name, w.Code)
		}
	}
	for name, w := range workers {
		for _, l := range e2e.Lines(w.Err.String()) {
			if strings.Contains(l, `"msg":"command exited`) || strings.Contains(l, `msg="command exited`) {
				t.Fatalf("worker %s: %s; want the leader's command (token %d, %s) to keep running", name, l, token, leader)
			}
		}
	}
	noWarnings(t, append(slices.Collect(maps.Values(workers)), srv)...)
	workers[leader].Signal(t, syscall.SIGKILL)
	next, tok := leadingWorker(t, workers, leader, token, 10*time.Second+e2e.Slack)
	t.Logf("%s led with token %d; killed, %s leads with token %d", leader, token, next, tok)
}
