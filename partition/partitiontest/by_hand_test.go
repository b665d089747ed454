package partitiontest

import (
	"strings"
	"testing"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// TestByHandNeverLeftOutUnsaid: Run refuses options that neither give nor
// leave out (with a reason) each check of an edit by hand, that do both,
// or that leave out a check that does not exist.
func TestByHandNeverLeftOutUnsaid(t *testing.T) {
	free := WithFreeByHand(func(*testing.T, string, string) {})
	move := WithMovedMembership(func(*testing.T, partition.Member, string) {}, true)
	own := WithOwnerByHand(func(*testing.T, string, string, partition.Member) {})
	ignored := WithIgnoredEdit(func(*testing.T, partition.Member, tenure.Grant) {})
	for _, tc := range []struct {
		name string
		opts []Option
		want []string // in the error; none for no error
	}{
		{"none", nil, []string{"FreedByHand: give", "MovedMembership: give", "OtherGroupsOwner: give", "IgnoredEdit: give"}},
		{"one missing", []Option{free, move, own}, []string{"IgnoredEdit: give"}},
		{"empty reason", []Option{free, move, own, WithoutByHand("IgnoredEdit", " ")}, []string{"IgnoredEdit: give"}},
		{"both", []Option{free, move, own, ignored, WithoutByHand("IgnoredEdit", "x")}, []string{"IgnoredEdit: both"}},
		{"no such check", []Option{free, move, own, ignored, WithoutByHand("Freed", "x")}, []string{`WithoutByHand("Freed"): no such check`}},
		{"all given", []Option{free, move, own, ignored}, nil},
		{"one left out, said why", []Option{free, move, own, WithoutByHand("IgnoredEdit", "writes nothing for people alone")}, nil},
	} {
		var o options
		for _, opt := range tc.opts {
			opt(&o)
		}
		err := o.validate()
		if len(tc.want) == 0 && err != nil {
			t.Errorf("%s: refused: %v", tc.name, err)
		}
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: validate() = %v; want it to say %q", tc.name, err, w)
			}
		}
	}
}
