// Package raceexit makes the race-built programs a test starts exit at
// once.
//
// A program built with -race waits a second as it exits, so that its
// other threads may finish a race report (ThreadSanitizer's
// atexit_sleep_ms, 1000 by default). Tests that start race-built
// processes and wait for each to exit (tenure run under the end-to-end
// tests, the test binary run again as a guard, a chaos node or a bench
// child) spend that second every time. A Go race report is written whole
// by the goroutine that finds the race, before it goes on, and the exit
// status says a race was found (66) whatever the sleep.
package raceexit

import (
	"os"
	"strings"
)

// Env is the environment variable that sets the race detector's options,
// space-separated.
const Env = "GORACE"

// Quick adds atexit_sleep_ms=0 to GORACE in this process's environment,
// which the processes it starts inherit (and those started with an
// environment built from os.Environ), unless GORACE sets atexit_sleep_ms
// already. Call it in TestMain, before any test starts a process.
func Quick() {
	v := os.Getenv(Env)
	if strings.Contains(v, "atexit_sleep_ms=") {
		return
	}
	os.Setenv(Env, strings.TrimSpace(v+" atexit_sleep_ms=0"))
}
