package postgres

import (
	"errors"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/errs"
)

// Sentinel errors. Callers match them with errors.Is (the tenure command
// tells a bad --postgres by ErrInvalidDSN).
var (
	// ErrInvalidDSN is wrapped by Dial's error for a DSN it cannot parse.
	ErrInvalidDSN = errors.New("postgres: invalid DSN")

	// ErrInvalidOption is wrapped by errors about an option value.
	// It also matches tenure.ErrInvalidConfig.
	ErrInvalidOption = errs.Kind("postgres: invalid option", tenure.ErrInvalidConfig)

	// ErrTableShape is wrapped by errors about an existing table whose
	// columns or indexes differ from what the coordinator or a fence
	// needs; the error names the table and the column.
	ErrTableShape = errors.New("postgres: table has the wrong shape")

	// ErrRowNotFound is wrapped by the error a fence returns when the row to
	// update does not exist.
	ErrRowNotFound = errors.New("postgres: fenced row not found")
)
