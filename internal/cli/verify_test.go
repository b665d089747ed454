package cli

import (
	"fmt"
	"go/parser"
	gotoken "go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenure-dev/tenure/internal/chaos"
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
// why a family asked for cannot.
func TestVerifyFamiliesHeader(t *testing.T) {
	all := chaos.Families()
	for _, tc := range []struct {
		fams    []string
		members int
		asked   bool
		want    string
	}{
		{all, 1, false, "partition,blackhole,latency,reset,pause,crash,degrade,clock"},
		{all, 3, false, "partition,blackhole,latency,reset,pause,crash,member,degrade,clock"},
		{[]string{chaos.FamilyMember, chaos.FamilyPause}, 1, true, "pause (member faults need --members 3)"},
		{[]string{chaos.FamilyMember}, 1, true, "none (member faults need --members 3)"},
	} {
		if got := verifyFamilies(tc.fams, tc.members, tc.asked); got != tc.want {
			t.Errorf("verifyFamilies(%v, %d, %v) = %q; want %q", tc.fams, tc.members, tc.asked, got, tc.want)
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
