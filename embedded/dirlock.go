package embedded

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFile is the file in a member's data directory that the member holds
// an exclusive flock(2) on while it runs, with its process id inside.
const LockFile = "tenure.lock"

// ErrDirInUse is wrapped by Start's error when another process runs a
// member on the same data directory (see DirInUseError). Callers match it
// with errors.Is.
var ErrDirInUse = errors.New("embedded: data dir in use")

// DirInUseError says which process holds a data directory.
type DirInUseError struct {
	// Dir is the data directory.
	Dir string
	// PID is the process that holds it, 0 when it could not be found.
	PID int
}

// Error says which directory and process: "data dir d is in use by
// process 4242".
func (e *DirInUseError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("data dir %s is in use by another process", e.Dir)
	}
	return fmt.Sprintf("data dir %s is in use by process %d", e.Dir, e.PID)
}

// Unwrap makes errors.Is(err, ErrDirInUse) true.
func (e *DirInUseError) Unwrap() error { return ErrDirInUse }

// lockDir takes dir's lock file without waiting, or fails with a
// *DirInUseError. etcd itself would wait forever on its database's lock;
// the database is probed too, for a member started by another program.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded: lock data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("embedded: lock data dir %s: %w", dir, err)
		}
		b, _ := os.ReadFile(f.Name())
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return nil, &DirInUseError{Dir: dir, PID: pid}
	}
	if err := probeDB(dir); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// probeDB fails with a *DirInUseError when etcd's database in dir is
// locked by another process.
func probeDB(dir string) error {
	db := filepath.Join(dir, "member", "snap", "db")
	f, err := os.Open(db)
	if err != nil {
		return nil // no database yet: nothing to wait for
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return &DirInUseError{Dir: dir, PID: flockHolder(f)}
	}
	if err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	return nil
}

// flockHolder finds in /proc/locks the process holding a flock on f, or 0.
func flockHolder(f *os.File) int {
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer locks.Close()
	// 1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF
	inode := ":" + strconv.FormatUint(sys.Ino, 10)
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 6 && fields[1] == "FLOCK" && strings.HasSuffix(fields[5], inode) {
			pid, _ := strconv.Atoi(fields[4])
			return pid
		}
	}
	return 0
}
