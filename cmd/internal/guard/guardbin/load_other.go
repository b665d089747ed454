//go:build !linux

package guardbin

import (
	"errors"
	"os"
)

// ExecPath is the path a guard process executes; the guard needs Linux.
const ExecPath = ""

// Load returns an error: the guard needs Linux.
func Load() (*os.File, error) {
	return nil, errors.New("guardbin: the guard needs Linux")
}
