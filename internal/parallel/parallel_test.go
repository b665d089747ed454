package parallel

import (
	"flag"
	"testing"
)

// TestRaise: the default is raised to n, never lowered, and an explicit
// -test.parallel is kept.
func TestRaise(t *testing.T) {
	f := flag.Lookup(name)
	orig := f.Value.String()
	t.Cleanup(func() { f.Value.Set(orig) })
	for _, tc := range []struct {
		name     string
		explicit bool
		cur      string
		n        int
		want     string
	}{
		{"default raised", false, "2", 8, "8"},
		{"never lowered", false, "16", 8, "16"},
		{"explicit kept", true, "1", 8, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.Value.Set(tc.cur)
			if tc.explicit {
				flag.Set(name, tc.cur) // marks it as set on the command line
			}
			Raise(tc.n)
			if got := f.Value.String(); got != tc.want {
				t.Errorf("after Raise(%d) from %s (explicit %t): -test.parallel = %s; want %s", tc.n, tc.cur, tc.explicit, got, tc.want)
			}
		})
	}
}
