// Package parallel sets how many tests of a package run at once when the
// go test command line does not say.
//
// go test runs at most GOMAXPROCS parallel tests at a time (-parallel): two
// on a two-core machine. Tests that spend their time waiting on real time
// (a lease running out, a process being killed at its deadline) leave the
// CPU idle while they wait, so a package of them takes as long as the sum of
// their waits, two at a time. Raise lets such a package run more of them at
// once; an explicit -parallel (or -test.parallel) still wins.
package parallel

import (
	"flag"
	"strconv"
)

const name = "test.parallel"

// Raise sets -test.parallel to n when the command line left it at its
// default and the default is lower. Call it from TestMain, before m.Run.
func Raise(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup(name)
	if f == nil {
		return // not a test binary
	}
	set := false
	flag.Visit(func(g *flag.Flag) { set = set || g.Name == name })
	if cur, err := strconv.Atoi(f.Value.String()); set || err != nil || cur >= n {
		return
	}
	_ = f.Value.Set(strconv.Itoa(n)) // an int flag takes any decimal int
}
