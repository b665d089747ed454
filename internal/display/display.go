// Package display formats what tenure's errors and status output show of
// bad inputs and holder identities, the same way in every package.
package display

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxQuoted is how much of a bad input an error message shows.
const maxQuoted = 64

// Input quotes s for an error message, cut after 64 bytes (on a character
// boundary) so that a 10,000-byte input does not flood the terminal:
// "kkkk…" (10000 bytes).
func Input(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > maxQuoted-(utf8.UTFMax-1) && !utf8.RuneStart(s[cut]) {
		cut-- // back to the start of a character, unless s is not UTF-8 here
	}
	return fmt.Sprintf("%s (%d bytes)", strconv.Quote(s[:cut]+"…"), len(s))
}

// SplitIdentity splits a holder identity "name#instance" (tenure.Identity)
// into its display name and instance id. A holder without '#' (written by
// another tool) is all name.
func SplitIdentity(holder string) (name, instance string) {
	if i := strings.LastIndexByte(holder, '#'); i >= 0 {
		return holder[:i], holder[i+1:]
	}
	return holder, ""
}

// Holder formats a holder identity for people: the quoted display name,
// and the instance id when there is one: "web-1" (instance 3f2a9c01).
func Holder(holder string) string {
	name, inst := SplitIdentity(holder)
	if inst == "" {
		return strconv.Quote(name)
	}
	return strconv.Quote(name) + " (instance " + inst + ")"
}
