// Package guardbin holds the guard's own program (cmd/tenure-guard) inside
// the tenure binary, and loads it for tenure run to execute from memory.
//
// The guard of `tenure run` (package guard) supervises one command. As a
// program of its own it links the guard and the standard library only: it
// starts in a few milliseconds and stays resident in a few megabytes, where
// re-executing the tenure binary would initialise every package linked into
// tenure (etcd, Kubernetes, Prometheus, …) for nothing.
//
// go generate builds the program into bin/ (git-ignored), named for its
// platform (tenure-guard-linux-amd64), and the tenure binary embeds that
// directory: one download, one file. A plain `go build` or `go run`,
// without go generate, embeds no program; [Load] then returns
// [ErrAbsent] and tenure re-executes itself as the guard instead (the
// hidden command guard.Command). docs/build.md gives the release build.
//
// [Load] copies the program into a sealed anonymous memory file
// (memfd_create); tenure passes it to the guard process as file
// descriptor [guard.ExeFD] and executes /proc/self/fd/5, so nothing is
// written to disk and nothing on disk can replace it.
package guardbin

//go:generate env CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags=-s -o bin/tenure-guard-$GOOS-$GOARCH ../../../tenure-guard
