// Package testparallel sets how many tests of a test package run at once,
// for test packages whose tests mostly wait on real time rather than on the
// CPU.
package testparallel

import (
	"flag"
	"strconv"
)

// Set sets go test's -parallel (how many of the package's tests that call
// t.Parallel run at once) to n, unless the command line gives -parallel or
// n is 0 or less, in which case go test's default, GOMAXPROCS, stays. Call
// it in TestMain after flag.Parse and before m.Run.
func Set(n int) error {
	f := flag.Lookup("test.parallel")
	if f == nil || n <= 0 {
		return nil
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given {
		return nil
	}
	return flag.Set("test.parallel", strconv.Itoa(n))
}
