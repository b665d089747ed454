//go:build unix && !linux

package guard

import (
	"errors"
	"os"
)

// AcceptReport fails: the guard needs Linux.
func AcceptReport(rep *os.File, pid int) (*os.File, error) {
	return nil, errors.New("the guard needs Linux")
}
