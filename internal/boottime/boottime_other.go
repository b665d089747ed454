//go:build !linux

package boottime

func now() Instant { return fallback() }
