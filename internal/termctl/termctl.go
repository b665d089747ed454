// Package termctl names the end of a tenure term the one way that the
// command's logs, metrics and status pages give it.
package termctl

import "github.com/tenure-dev/tenure"

// Reason is transition kind k as one of the five reasons that logs, metrics
// and status pages give for a transition: k's String, except that
// SteppedDown is "released" too (the node gave the key up on purpose).
func Reason(k tenure.TransitionKind) string {
	if k == tenure.SteppedDown {
		return "released"
	}
	return k.String()
}
