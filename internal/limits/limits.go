// Package limits holds the bounds tenure.ValidateKey, ValidateHolder and
// ValidateTTL enforce, for the packages of this module that check inputs
// against them too (group and prefix validation, the conformance suite, the
// tenure command's flag checks).
package limits

import "time"

const (
	// MaxKeyLen is the longest key, in bytes.
	MaxKeyLen = 200
	// MaxHolderLen is the longest holder identity, in bytes.
	MaxHolderLen = 256
	// MaxTTL is the longest lease any coordinator is asked for.
	MaxTTL = 24 * time.Hour
)
