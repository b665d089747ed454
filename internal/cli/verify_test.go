package cli

import (
	"fmt"
	"testing"

	"github.com/tenure-dev/tenure/chaos"
)

// verify's flags: --plant without --faults leaves the families to chaos
// (the ones that expose the bug, aimed at the leader); --faults wins.
func TestVerifyOptions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the families the run draws
	}{
		{[]string{"--plant", chaos.PlantNoToken}, fmt.Sprint(chaos.PlantFamilies(chaos.PlantNoToken))},
		{[]string{"--plant", chaos.PlantNoMargin}, "[degrade]"},
		{[]string{"--plant", chaos.PlantNoMargin, "--faults", "crash,reset"}, "[crash reset]"},
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
