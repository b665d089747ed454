package partitiontest

import (
	"fmt"
	"slices"
	"strings"
)

// byHand are the checks that need an edit by hand on the backend, each
// with whether the options give that edit.
func (o options) byHand() map[string]bool {
	return map[string]bool{
		"FreedByHand":      o.free != nil,
		"MovedMembership":  o.move != nil,
		"OtherGroupsOwner": o.own != nil,
		"IgnoredEdit":      o.ignored != nil,
	}
}

// WithoutByHand runs the suite without check, one of FreedByHand,
// MovedMembership, OtherGroupsOwner and IgnoredEdit, for a backend on
// which no operator can make that edit (or whose records nothing outside
// its process can reach), or whose coordinator another conformance test
// already holds to that check; why says so, and must not be empty. Run needs,
// for each of those checks, the option that gives its edit or
// WithoutByHand, so that no backend leaves one out by forgetting it.
func WithoutByHand(check, why string) Option {
	return func(o *options) {
		if o.without == nil {
			o.without = map[string]string{}
		}
		o.without[check] = why
	}
}

// validate reports what Run cannot run with: a check of an edit by hand
// neither given nor left out with a reason, or both.
func (o options) validate() error {
	given := o.byHand()
	var bad []string
	for check := range o.without {
		if _, ok := given[check]; !ok {
			bad = append(bad, fmt.Sprintf("WithoutByHand(%q): no such check", check))
		}
	}
	for check, ok := range given {
		why, left := o.without[check]
		switch {
		case ok && left:
			bad = append(bad, fmt.Sprintf("%s: both its edit and WithoutByHand given", check))
		case !ok && strings.TrimSpace(why) == "":
			bad = append(bad, fmt.Sprintf("%s: give the backend's edit by hand, or WithoutByHand(%q, why no operator can make it)", check, check))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return fmt.Errorf("partitiontest: %s", strings.Join(bad, "; "))
}
