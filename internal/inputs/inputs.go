// Package inputs checks the inputs that partition groups and key
// listings take, for the coordinators and package partition alike, with
// errors that wrap tenure's sentinel errors and name the bad input.
package inputs

import (
	"fmt"
	"strings"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/display"
	"github.com/tenure-dev/tenure/internal/limits"
)

// Prefix reports whether prefix can begin a key: empty, or bytes of
// [A-Za-z0-9._/-] without a leading '/', as a coordinator's List takes.
// The error wraps tenure.ErrInvalidKey.
func Prefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if len(prefix) > limits.MaxKeyLen {
		return fmt.Errorf("%w: prefix %s is %d bytes long, at most %d allowed", tenure.ErrInvalidKey, display.Input(prefix), len(prefix), limits.MaxKeyLen)
	}
	if prefix[0] == '/' {
		return fmt.Errorf("%w: prefix %q must not start with '/'", tenure.ErrInvalidKey, prefix)
	}
	for i := 0; i < len(prefix); i++ {
		switch c := prefix[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == '/', c == '-':
		default:
			return fmt.Errorf("%w: prefix %q: byte %q at %d is not allowed (use A-Z a-z 0-9 . _ / -)", tenure.ErrInvalidKey, prefix, c, i)
		}
	}
	return nil
}

// Join reports whether JoinGroup can make id a member of group with
// a lease of ttl, announcing partitions partitions (see
// partition.Coordinator). The error wraps tenure.ErrInvalidKey,
// tenure.ErrInvalidHolder, tenure.ErrInvalidTTL or tenure.ErrInvalidConfig.
func Join(group, id string, ttl time.Duration, partitions int) error {
	if err := tenure.ValidateKey(group); err != nil {
		return err
	}
	if err := tenure.ValidateHolder(id); err != nil {
		return err
	}
	if err := tenure.ValidateTTL(ttl); err != nil {
		return err
	}
	if partitions < 0 {
		return fmt.Errorf("%w: member %q of %q announces %d partitions; want 0 or more", tenure.ErrInvalidConfig, id, group, partitions)
	}
	return nil
}

// PartitionName reports whether name can name a partition: one path
// element of a key (bytes of [A-Za-z0-9._-], not "." or "..", no '/'). The
// error wraps tenure.ErrInvalidKey.
func PartitionName(name string) error {
	if strings.Contains(name, "/") {
		return fmt.Errorf("%w: partition name %q must not contain '/'", tenure.ErrInvalidKey, name)
	}
	if err := tenure.ValidateKey(name); err != nil {
		return fmt.Errorf("partition name: %w", err)
	}
	return nil
}

// Group reports whether group can be a partition group's key with
// partitions of names up to nameLen bytes. The error wraps
// tenure.ErrInvalidKey.
func Group(group string, nameLen int) error {
	if err := tenure.ValidateKey(group); err != nil {
		return fmt.Errorf("group: %w", err)
	}
	if n := len(group) + 1 + nameLen; n > limits.MaxKeyLen {
		return fmt.Errorf("%w: group %q with partition names of %d bytes makes keys of %d bytes, at most %d allowed", tenure.ErrInvalidKey, group, nameLen, n, limits.MaxKeyLen)
	}
	return nil
}
