package cli

import (
	"fmt"
	"go/parser"
	gotoken "go/token"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/chaos"
	"github.com/tenure-dev/tenure/internal/plant"
)

// verify's flags: --plant without --faults leaves the families to chaos
// (the ones that expose the bug, aimed at the leader); --faults wins.
func TestVerifyOptions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the families the run draws
	}{
		{[]string{"--plant", plant.NoToken}, fmt.Sprint(chaos.PlantFamilies(plant.NoToken))},
		{[]string{"--plant", plant.NoMargin}, "[degrade]"},
		{[]string{"--plant", plant.NoMargin, "--faults", "crash,reset"}, "[crash reset]"},
		{nil, fmt.Sprint(chaos.Families())},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			o, err := verifyOptions(t, tc.args...)
			if err != nil {
				t.Fatalf("options(%v) = %v", tc.args, err)
			}
			fams := o.Families
			if fams == nil {
				fams = chaos.PlantFamilies(o.Plant)
			}
			if got := fmt.Sprint(fams); got != tc.want {
				t.Errorf("verify %v draws %s; want %s", tc.args, got, tc.want)
			}
		})
	}
}

// verify's header lists only the fault families that can strike, and says
// why a family asked for cannot; on an API server verify did not start,
// it always says that the apiserver family cannot.
func TestVerifyFamiliesHeader(t *testing.T) {
	all := chaos.Families()
	embedded3 := chaos.Options{Members: 3}
	external := chaos.Options{Members: 1, Kubeconfig: "kc"}
	own := chaos.Options{Members: 1, KubeAPIServer: "kube-apiserver"}
	const noRestart = "no apiserver faults: verify restarts only an API server it started, with --kube-apiserver"
	for _, tc := range []struct {
		fams  []string
		o     chaos.Options
		asked bool
		want  string
	}{
		{all, chaos.Options{Members: 1}, false, "partition,blackhole,latency,reset,pause,crash,degrade,clock"},
		{all, embedded3, false, "partition,blackhole,latency,reset,pause,crash,member,degrade,clock"},
		{[]string{chaos.FamilyMember, chaos.FamilyPause}, chaos.Options{Members: 1}, true, "pause (member faults need --members 3)"},
		{[]string{chaos.FamilyMember}, chaos.Options{Members: 1}, true, "none (member faults need --members 3)"},
		{[]string{chaos.FamilyAPIServer, chaos.FamilyPause}, chaos.Options{Members: 1}, true, "pause (apiserver faults need --kube-apiserver)"},
		{all, own, false, "partition,blackhole,latency,reset,pause,crash,apiserver,degrade,clock"},
		{all, external, false, "partition,blackhole,latency,reset,pause,crash,degrade,clock (" + noRestart + ")"},
		{[]string{chaos.FamilyDegrade}, external, false, "degrade (" + noRestart + ")"},
		{[]string{chaos.FamilyMember, chaos.FamilyAPIServer}, external, true, "none (member faults need --members 3; " + noRestart + ")"},
	} {
		if got := verifyFamilies(tc.fams, tc.o, tc.asked); got != tc.want {
			t.Errorf("verifyFamilies(%v, %+v, %v) = %q; want %q", tc.fams, tc.o, tc.asked, got, tc.want)
		}
	}
}

// The node clock of verify's clock faults is reachable only from verify's
// node processes: verify.go is the one file of the CLI that uses package
// chaos (whose RunNode runs a node on its own clock), so `tenure run` and
// every other command have no path to it.
func TestOnlyVerifyReachesChaos(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := gotoken.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if strings.HasSuffix(imp.Path.Value, `/internal/chaos"`) && name != "verify.go" {
				t.Errorf("%s imports package chaos; only verify.go may", name)
			}
		}
	}
}

// Every number verify takes is honoured as given, or refused with the
// reason; a default applies only when the flag was not given (#21 item 5:
// --margin 0 ran with the TTL/10 default).
func TestVerifyHonoursExplicitValues(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		check   func(o chaos.Options) bool
		want    string // what the options must say, or the error must contain
		refused bool
	}{
		{[]string{"--margin", "50ms"}, func(o chaos.Options) bool { return o.Margin == 50*time.Millisecond }, "margin 50ms, the least", false},
		{[]string{"--margin", "0"}, nil, "--margin 0s is below the least margin, 50ms", true},
		{[]string{"--max-drift", "0"}, func(o chaos.Options) bool { return o.MaxDrift == 0 }, "max drift 0", false},
		{[]string{"--seed", "0"}, func(o chaos.Options) bool { return o.Seed == 0 }, "seed 0", false},
		{nil, func(o chaos.Options) bool {
			return o.Margin == 200*time.Millisecond && o.MaxDrift == 0.01 && o.TTL == 2*time.Second
		}, "margin TTL/10 of the default TTL", false},
		{[]string{"--ttl", "3s"}, func(o chaos.Options) bool { return o.Margin == 300*time.Millisecond }, "margin TTL/10 of the TTL given", false},
		{[]string{"--ttl", "0"}, nil, "--ttl 0s: must be positive", true},
		{[]string{"--duration", "0"}, nil, "--duration (0s) must be at least 5s", true},
		{[]string{"--members", "0"}, nil, "--members (0) must be 1 or 3", true},
		{[]string{"--nodes", "0"}, nil, "--nodes (0) must be between 2 and 9", true},
		{[]string{"--margin", "-1s"}, nil, "--margin (-1s) must not be negative", true},
		{[]string{"--max-drift", "0.5"}, nil, "--max-drift (0.5) must be in [0, 0.5)", true},
		{[]string{"--ttl", "1s", "--margin", "1s"}, nil, "--ttl 1s is too short for --margin 1s", true},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			o, err := verifyOptions(t, tc.args...)
			switch {
			case tc.refused && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("options(%v) error = %v; want one containing %q", tc.args, err, tc.want)
			case !tc.refused && err != nil:
				t.Fatalf("options(%v) = %v", tc.args, err)
			case !tc.refused && !tc.check(o):
				t.Errorf("options(%v): margin %s, max drift %v, TTL %s, seed %d; want %s", tc.args, o.Margin, o.MaxDrift, o.TTL, o.Seed, tc.want)
			}
		})
	}
}

// verify's first line says what the run uses, and calls a value the
// default only when its flag was not given.
func TestVerifyHeaderMarksOnlyDefaults(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		want, not string
	}{
		{nil, "(drawn), 2m0s, 3 nodes, TTL 2s, margin 200ms (TTL/10, the default), max drift 1%, faults partition,", ""},
		{[]string{"--margin", "50ms", "--seed", "7"}, "verify: seed 7, 2m0s, 3 nodes, TTL 2s, margin 50ms, max drift 1%, faults", "default"},
		{[]string{"--max-drift", "0", "--ttl", "5s", "--duration", "30s"}, ", 30s, 3 nodes, TTL 5s, margin 500ms (TTL/10, the default), max drift 0%, faults", ""},
	} {
		cmd, f := parseVerify(t, tc.args...)
		var g globalFlags
		o, err := f.options(cmd, &g)
		if err != nil {
			t.Fatalf("options(%v) = %v", tc.args, err)
		}
		got := verifyHeader(cmd, *f, o)
		if !strings.Contains(got, tc.want) || (tc.not != "" && strings.Contains(got, tc.not)) {
			t.Errorf("verify %v: header %q; want %q in it, and no %q", tc.args, got, tc.want, tc.not)
		}
	}
}
