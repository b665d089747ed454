package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// A Lease is the content of the lease file the guard keeps for its command
// (path in TENURE_LEASE_FILE), one JSON object replaced atomically (written
// to a temporary file, then renamed) on every change:
//
//	{"key":"jobs","holder":"web-1","instance":"3f9c2a","token":42,
//	 "deadline_boot_ns":123456789000,"ttl_ms":10000,"live":true}
//
// The lease is safely held while live is true and the boot clock
// (CLOCK_BOOTTIME, in nanoseconds) reads less than deadline_boot_ns: the
// boot clock of the writer's time namespace, whose offset from the host's
// is boot_offset_ns (omitted when 0: see BootOffset and Lease.Now).
type Lease struct {
	Key      string           `json:"key"`
	Holder   string           `json:"holder"`   // the display name
	Instance string           `json:"instance"` // the per-process instance id
	Token    uint64           `json:"token"`
	Deadline boottime.Instant `json:"deadline_boot_ns"`
	TTLMs    int64            `json:"ttl_ms"`
	Live     bool             `json:"live"` // false once the term has ended
	// BootOffset is the boottime offset of the writer's time namespace
	// (see BootOffset), on whose boot clock Deadline is.
	BootOffset time.Duration `json:"boot_offset_ns,omitempty"`
}

// Errors of Lease.Check.
var (
	// ErrEnded: the term is over (the guard was told, or killed the command).
	ErrEnded = errors.New("guard: term ended")
	// ErrExpired: the local deadline has passed on the boot clock.
	ErrExpired = errors.New("guard: local deadline passed")
)

// Now reads the boot clock as the writer of l reads it: this process's,
// less the offset of its time namespace, plus the writer's. A reader in a
// time namespace of its own (unshare --time, a container restored with a
// boot-clock offset) whose clock reads behind the writer's would otherwise
// see a live lease held past its deadline, after the key was handed over.
// It fails when it cannot tell this process's offset, or read the boot
// clock (boottime.Read).
func (l Lease) Now() (boottime.Instant, error) {
	off, err := BootOffset()
	if err != nil {
		return 0, err
	}
	now, err := boottime.Read()
	if err != nil {
		return 0, err
	}
	return now.Add(l.BootOffset - off), nil
}

// Check returns nil while the lease is safely held at now (on the writer's
// boot clock: see Now), and an error
// wrapping ErrEnded or ErrExpired otherwise.
func (l Lease) Check(now boottime.Instant) error {
	if !l.Live {
		return fmt.Errorf("token %d of %q: %w", l.Token, l.Key, ErrEnded)
	}
	if now >= l.Deadline {
		return fmt.Errorf("token %d of %q: %w %s ago", l.Token, l.Key, ErrExpired, now.Sub(l.Deadline).Round(time.Millisecond))
	}
	return nil
}

// ReadLease reads the lease file at path.
func ReadLease(path string) (Lease, error) {
	b, err := readRegular(path)
	if err != nil {
		return Lease{}, fmt.Errorf("lease file: %w", err)
	}
	l, err := parseLease(b)
	if err != nil {
		return l, fmt.Errorf("lease file %s: %w", path, err)
	}
	return l, nil
}

// parseLease parses a lease file's content. Anything but one whole JSON
// object (a file cut short, two records, …) is an error.
func parseLease(b []byte) (Lease, error) {
	var l Lease
	err := json.Unmarshal(b, &l)
	return l, err
}

// EndLease makes the lease file at path stop saying the lease is held:
// unless it already does not (it says the term ended, it cannot be parsed,
// or there is no file), it replaces it with the same lease marked ended,
// or, if that fails, removes it. A live file is marked ended even when its
// deadline has passed at now: a reader whose boot clock is offset (in a
// time namespace of its own) may not see it passed. It returns an error
// only while the file may still say the lease is held (its deadline has
// not passed at now): then nothing may hand the lease over before the
// deadline the file says.
func EndLease(path string, now boottime.Instant) error {
	b, err := readRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	passed := false // the file's deadline has passed at now
	if err == nil {
		l, perr := parseLease(b)
		if perr != nil || !l.Live {
			return nil // lease check refuses it
		}
		passed = l.Check(now) != nil
		l.Live = false
		if err = writeLease(path, l); err == nil {
			return nil
		}
	}
	if rerr := os.Remove(path); rerr == nil || errors.Is(rerr, fs.ErrNotExist) || passed {
		return nil
	}
	return fmt.Errorf("lease file %s may still say the lease is held: %w", path, err)
}

// readRegular reads the regular file at path. Anything else there (a
// named pipe the command put, say) is an error, found without waiting.
func readRegular(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	return io.ReadAll(f)
}

// writeLease replaces the lease file at path atomically.
func writeLease(path string, l Lease) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".lease-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// endLease marks the lease file ended, if it says the term is live.
func (s *state) endLease() {
	if s.lease.Live {
		s.lease.Live = false
		s.save()
	}
}
