//go:build !linux

package guard

import "time"

// BootOffset is 0: time namespaces are Linux's.
func BootOffset() (time.Duration, error) { return 0, nil }
