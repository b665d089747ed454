package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

// examplesDir is the repository's examples/ directory.
const examplesDir = "../../../examples"

// unitFile is a systemd unit: section → key → values, in order.
type unitFile map[string]map[string][]string

// parseUnit parses a systemd unit file as systemd does for what the
// examples use: [Section] headers, Key=Value lines, comments (# or ;) on
// their own lines, and lines continued with a trailing backslash.
func parseUnit(t *testing.T, path string) unitFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unitFile{}
	section, pending := "", ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if pending == "" && (line == "" || line[0] == '#' || line[0] == ';') {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			pending += cont + " "
			continue
		}
		line, pending = pending+line, ""
		if strings.HasPrefix(line, "[") {
			if !strings.HasSuffix(line, "]") {
				t.Fatalf("%s:%d: malformed section header %q", path, n, line)
			}
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || section == "" || strings.TrimSpace(key) == "" {
			t.Fatalf("%s:%d: want Key=Value inside a [Section], got %q", path, n, line)
		}
		key = strings.TrimSpace(key)
		u[section][key] = append(u[section][key], strings.TrimSpace(value))
	}
	if pending != "" {
		t.Fatalf("%s: ends inside a continued line", path)
	}
	return u
}

// helpCache runs "tenure SUB --help" once per subcommand.
type helpCache map[string]string

func (h helpCache) of(t *testing.T, sub string) string {
	t.Helper()
	if out, ok := h[sub]; ok {
		return out
	}
	res := e2e.RunTenure(t, nil, sub, "--help")
	if res.Code != 0 {
		t.Fatalf("tenure %s --help: exit %d\n%s", sub, res.Code, res.Stderr)
	}
	h[sub] = res.Stdout
	return res.Stdout
}

// checkInvocation checks that args (after the tenure binary) name a
// tenure command and only flags it documents, and env only the
// environment twins its help lists.
func (h helpCache) checkInvocation(t *testing.T, where string, args []string, env []string) {
	t.Helper()
	if len(args) == 0 {
		t.Fatalf("%s: no tenure command", where)
	}
	help := h.of(t, args[0])
	for _, a := range args[1:] {
		if a == "--" {
			break
		}
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		if !regexp.MustCompile(`(?m)^\s+(-\w, )?--` + regexp.QuoteMeta(name) + `\b`).MatchString(help) {
			t.Errorf("%s: tenure %s has no flag --%s", where, args[0], name)
		}
	}
	for _, e := range env {
		name, _, _ := strings.Cut(e, "=")
		if strings.HasPrefix(name, "TENURE_") && !strings.Contains(help, "\n  "+name+" ") {
			t.Errorf("%s: tenure %s --help lists no %s", where, args[0], name)
		}
	}
	if args[0] == "run" && !strings.Contains(strings.Join(args, " "), " -- ") {
		t.Errorf("%s: tenure run without \"--\" before the command", where)
	}
}

// TestExamplesSystemd: the systemd units parse, have what systemd needs
// to start and enable them, and run tenure with real flags.
func TestExamplesSystemd(t *testing.T) {
	t.Parallel()
	h := helpCache{}
	for file, sub := range map[string]string{"tenure-server.service": "server", "tenure-run-jobs.service": "run"} {
		t.Run(file, func(t *testing.T) {
			u := parseUnit(t, filepath.Join(examplesDir, "systemd", file))
			for _, s := range []string{"Unit", "Service", "Install"} {
				if u[s] == nil {
					t.Fatalf("no [%s] section", s)
				}
			}
			if len(u["Install"]["WantedBy"]) == 0 || len(u["Unit"]["Description"]) == 0 {
				t.Errorf("want Description= and WantedBy=")
			}
			exec := u["Service"]["ExecStart"]
			if len(exec) != 1 {
				t.Fatalf("ExecStart = %q; want one", exec)
			}
			args := strings.Fields(exec[0])
			if filepath.Base(args[0]) != "tenure" || !filepath.IsAbs(args[0]) || args[1] != sub {
				t.Fatalf("ExecStart = %q; want an absolute path to tenure %s", exec[0], sub)
			}
			h.checkInvocation(t, file+" ExecStart", args[1:], u["Service"]["Environment"])
			if got := u["Service"]["KillSignal"]; len(got) != 1 || got[0] != "SIGTERM" {
				t.Errorf("KillSignal = %q; want SIGTERM", got)
			}
			if sub == "run" && (len(u["Service"]["KillMode"]) != 1 || u["Service"]["KillMode"][0] != "mixed") {
				t.Errorf("KillMode = %q; want mixed, so that tenure forwards the stop and releases the key", u["Service"]["KillMode"])
			}
		})
	}
}

// dockerStage is one stage of a Dockerfile: its FROM arguments and its
// instructions, operation → arguments in order (continued lines joined).
type dockerStage struct {
	from  string
	instr map[string][]string
}

// parseDockerfile splits a Dockerfile into its stages.
func parseDockerfile(text string) []dockerStage {
	var stages []dockerStage
	text = strings.ReplaceAll(text, "\\\n", " ")
	for _, l := range strings.Split(text, "\n") {
		op, rest, ok := strings.Cut(strings.TrimSpace(l), " ")
		switch {
		case !ok || strings.HasPrefix(op, "#"):
		case op == "FROM":
			stages = append(stages, dockerStage{from: rest, instr: map[string][]string{}})
		case len(stages) > 0:
			last := stages[len(stages)-1].instr
			last[op] = append(last[op], rest)
		}
	}
	return stages
}

// TestExamplesContainer: the Dockerfile builds tenure with the Go of
// go.mod by the release build's script, into a minimal image that runs it
// as a user other than root, and its default command serves no other
// machine without TLS. compose.yaml beside it is checked and run by
// TestComposeRuns.
func TestExamplesContainer(t *testing.T) {
	t.Parallel()
	h := helpCache{}
	docker, err := os.ReadFile(filepath.Join(examplesDir, "container", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if goVersion == nil {
		t.Fatal("go.mod has no go directive")
	}
	stages := parseDockerfile(string(docker))
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages; want a build stage and the image", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	if want := " golang:" + string(goVersion[1]) + " "; !strings.Contains(" "+build.from+" ", want) {
		t.Errorf("Dockerfile builds FROM %q; want golang:%s (go.mod says go %s)", build.from, goVersion[1], goVersion[1])
	}
	if run := strings.Join(build.instr["RUN"], "\n"); !strings.Contains(run, "scripts/release-build.sh") || strings.Contains(run, "go build") {
		t.Errorf("Dockerfile RUN %q; want scripts/release-build.sh, the release build (static, guard embedded), and no go build of its own", run)
	}
	if base := strings.Fields(final.from)[0]; base != "scratch" && !strings.HasPrefix(base, "gcr.io/distroless/static") {
		t.Errorf("image FROM %q; want distroless/static or scratch", base)
	}
	if users := final.instr["USER"]; len(users) != 1 || regexp.MustCompile(`^(root|0)(:|$)`).MatchString(users[0]) {
		t.Errorf("image USER %q; want one user other than root", users)
	}
	var entry, cmd []string
	for _, x := range []struct {
		op  string
		dst *[]string
	}{{"ENTRYPOINT", &entry}, {"CMD", &cmd}} {
		if len(final.instr[x.op]) != 1 || json.Unmarshal([]byte(final.instr[x.op][0]), x.dst) != nil {
			t.Fatalf("Dockerfile %s = %q; want one JSON array (exec form, so tenure gets the stop signal)", x.op, final.instr[x.op])
		}
	}
	if len(entry) != 1 || filepath.Base(entry[0]) != "tenure" {
		t.Errorf("ENTRYPOINT = %q; want tenure", entry)
	}
	h.checkInvocation(t, "Dockerfile CMD", cmd, nil)
	checkServesSafely(t, cmd)

}

// checkServesSafely checks that args, the image's default command, serves
// no coordinator beyond loopback without TLS and client certificates, and
// does not ask for --insecure-listen.
func checkServesSafely(t *testing.T, args []string) {
	t.Helper()
	if len(args) == 0 || args[0] != "server" {
		return
	}
	var f serverFlags
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	f.register(fs)
	if err := fs.Parse(args[1:]); err != nil {
		t.Fatalf("default command %q: %v", args, err)
	}
	if f.insecureListen {
		t.Errorf("default command %q asks for --insecure-listen; want the image safe by default", args)
	}
	if err := checkListenSecure(&f); err != nil {
		t.Errorf("default command %q: %v", args, err)
	}
}
