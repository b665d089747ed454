package guardbin

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
)

// bin is the directory go generate builds the program into: its README
// alone in a plain build.
//
//go:embed all:bin
var bin embed.FS

// ErrAbsent is returned by [Load] and [Program] when the binary embeds no
// guard program for its platform: it was built without go generate.
var ErrAbsent = errors.New("guardbin: no guard program embedded (built without go generate)")

// File is the name go generate gives the program built for goos and
// goarch.
func File(goos, goarch string) string {
	return "tenure-guard-" + goos + "-" + goarch
}

// Program returns the embedded guard program for this platform, or an
// error matching [ErrAbsent].
func Program() ([]byte, error) {
	f, err := open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Embedded reports whether the binary embeds a guard program for its
// platform.
func Embedded() bool {
	f, err := open()
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// open opens the embedded guard program for this platform, or returns an
// error matching [ErrAbsent]. Reading it copies its bytes out of the
// binary's read-only data, chunk by chunk: [Load] streams it into memory
// without a copy of the whole program on tenure's heap.
func open() (fs.File, error) {
	name := File(runtime.GOOS, runtime.GOARCH)
	f, err := bin.Open("bin/" + name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no bin/%s", ErrAbsent, name)
	}
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || st.Size() == 0 {
		f.Close()
		return nil, fmt.Errorf("%w: bin/%s is empty", ErrAbsent, name)
	}
	return f, nil
}
