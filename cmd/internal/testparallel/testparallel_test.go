package testparallel

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

// Set raises -parallel when the command line gives none, and leaves it
// alone when it does or when n is 0.
func TestSet(t *testing.T) {
	f := flag.Lookup("test.parallel")
	before := f.Value.String()
	t.Cleanup(func() { f.Value.Set(before) })
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })

	if err := Set(0); err != nil || f.Value.String() != before {
		t.Fatalf("Set(0) = %v, -parallel %s; want nil, %s", err, f.Value, before)
	}
	want := strconv.Itoa(runtime.GOMAXPROCS(0) + 5)
	if given {
		want = before
	}
	if err := Set(runtime.GOMAXPROCS(0) + 5); err != nil || f.Value.String() != want {
		t.Fatalf("Set(GOMAXPROCS+5) with -parallel given %v = %v, -parallel %s; want nil, %s", given, err, f.Value, want)
	}
}
