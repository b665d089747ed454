// Command tenure-guard is the guard of `tenure run` as a program of its
// own: the process that keeps a command from outliving its lease (package
// cmd/internal/guard). It links nothing else, so that it starts in a few
// milliseconds and stays resident in a few megabytes.
//
// It is not installed on its own: go generate builds it into
// cmd/internal/guard/guardbin, the tenure binary embeds it and runs it from
// memory (docs/build.md). Its arguments are those of `tenure __guard`:
//
//	tenure-guard [--kill-grace D] -- PATH ARGV0 [ARG...]
//
// with its control channel on file descriptor 3 and its report channel on
// 4, Unix-domain sockets; it hands tenure a report channel of its own on 4
// once it is not dumpable (guard.AcceptReport).
package main

import (
	"os"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
)

func main() {
	os.Exit(guard.Main(os.Args[1:], os.Stderr))
}
