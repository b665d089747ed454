// Package identity draws the names and instance ids of holders: a
// holder's identity is "name#instance" (tenure.Identity).
package identity

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
)

// DefaultHolder returns "hostname-pid-random", unique per process: the
// name of a tenure.DefaultConfig.
func DefaultHolder() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// NewInstance draws a new instance id: 8 random hex digits.
func NewInstance() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ProcessInstance returns this process's instance id: 8 random hex
// digits, drawn once and fixed for the life of the process, for the
// Electors of one process that must share one identity (`tenure run`).
func ProcessInstance() string { return processInstance() }

var processInstance = sync.OnceValue(NewInstance)
