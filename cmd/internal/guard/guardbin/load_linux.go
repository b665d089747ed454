//go:build linux

package guardbin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
)

// ExecPath is the path a guard process executes: its own file descriptor
// guard.ExeFD, where it finds the program [Load] returned.
const ExecPath = "/proc/self/fd/5"

// Load copies the embedded guard program into a sealed anonymous file in
// memory (memfd_create), named guard.Name, and returns it open read-only
// and close-on-exec. Pass it to a guard process as file descriptor
// guard.ExeFD and execute [ExecPath]. It returns an error matching
// [ErrAbsent] when no program is embedded. The caller closes the file; a
// guard that runs it keeps it alive until it exits.
func Load() (*os.File, error) {
	prog, err := open()
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	return load(prog)
}

// load copies the program prog reads into memory as Load does.
func load(prog io.Reader) (*os.File, error) {
	const flags = unix.MFD_CLOEXEC | unix.MFD_ALLOW_SEALING
	fd, err := unix.MemfdCreate(guard.Name, flags|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		// Before Linux 6.3 there is no MFD_EXEC: every memfd is executable.
		fd, err = unix.MemfdCreate(guard.Name, flags)
	}
	if err != nil {
		return nil, fmt.Errorf("guardbin: memfd_create: %w", err)
	}
	w := os.NewFile(uintptr(fd), "memfd:"+guard.Name)
	defer w.Close()
	if _, err := io.Copy(w, prog); err != nil {
		return nil, fmt.Errorf("guardbin: write the guard program to memory: %w", err)
	}
	// Sealed: nobody can change the program once it is written.
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		return nil, fmt.Errorf("guardbin: seal the guard program: %w", err)
	}
	// A file open for writing cannot be executed (ETXTBSY): keep a
	// read-only descriptor of it, and close the writable one.
	r, err := os.Open("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return nil, fmt.Errorf("guardbin: reopen the guard program read-only: %w", err)
	}
	return r, nil
}
