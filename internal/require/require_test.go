package require

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// fakeT records what Missing did.
type fakeT struct{ fatal, skip string }

func (f *fakeT) Helper()                           {}
func (f *fakeT) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }
func (f *fakeT) Skipf(format string, args ...any)  { f.skip = fmt.Sprintf(format, args...) }

func TestRequired(t *testing.T) {
	c := Component{Name: "a widget", Env: "TENURE_REQUIRE_WIDGET", Install: "apt-get install widget"}
	cases := []struct {
		env, ci string
		want    bool
		bad     bool
	}{
		{"", "", false, false},
		{"1", "", true, false},
		{"TRUE", "", true, false},
		{"yes", "", true, false},
		{"0", "true", false, false}, // the variable wins over CI
		{"no", "", false, false},
		{"", "true", true, false}, // CI requires everything
		{"", "1", true, false},
		{"", "woodpecker", false, false},
		{"sometimes", "", false, true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s=%q,CI=%q", c.Env, tc.env, tc.ci), func(t *testing.T) {
			t.Setenv(c.Env, tc.env)
			t.Setenv("CI", tc.ci)
			got, err := c.Required()
			if (err != nil) != tc.bad || got != tc.want {
				t.Fatalf("Required() = %v, %v; want %v, error %v", got, err, tc.want, tc.bad)
			}
			if tc.bad && !strings.Contains(err.Error(), c.Env) {
				t.Fatalf("error %q does not name %s", err, c.Env)
			}
		})
	}
}

func TestMissing(t *testing.T) {
	c := Component{Name: "a gadget", Env: "TENURE_REQUIRE_GADGET", Install: "apt-get install gadget"}
	cause := errors.New("gadget: not found")
	var out strings.Builder
	noticeTo = func() (io.Writer, func()) { return &out, func() {} }
	t.Cleanup(func() { noticeTo = visibleStderr })

	t.Setenv("CI", "")
	t.Setenv(c.Env, "1")
	var f fakeT
	c.Missing(&f, cause)
	if f.skip != "" || !strings.Contains(f.fatal, "gadget: not found") || !strings.Contains(f.fatal, c.Install) {
		t.Fatalf("required: fatal %q, skip %q; want a failure naming the cause and the install command", f.fatal, f.skip)
	}

	t.Setenv(c.Env, "")
	f = fakeT{}
	c.Missing(&f, cause)
	if f.fatal != "" || !strings.Contains(f.skip, c.Install) || !strings.Contains(f.skip, c.Env) {
		t.Fatalf("not required: fatal %q, skip %q; want a skip saying how to install and how to require", f.fatal, f.skip)
	}
	c.Missing(&fakeT{}, cause)
	if got := out.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "SKIPPED tests that need a gadget") || !strings.Contains(got, c.Install) {
		t.Fatalf("notice = %q; want one line naming what was skipped and how to install it", got)
	}

	t.Setenv(c.Env, "maybe")
	f = fakeT{}
	c.Missing(&f, cause)
	if !strings.Contains(f.fatal, "maybe") {
		t.Fatalf("bad variable: fatal %q; want a failure naming the value", f.fatal)
	}
}
