package kube_test

import (
	"strings"
	"testing"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// TestForeignLeases: a Lease is a foreign record when Acquire refuses it
// but no grant wrote it as it stands (a holder that is not a holder
// identity, no holder without tenure's release mark, a duration over a
// day, an annotation naming another key), and not when tenure or
// client-go could have written it or it has expired.
func TestForeignLeases(t *testing.T) {
	tests := []struct {
		name      string
		holder    string
		secs      int32
		clash     bool
		foreign   bool
		malformed bool
	}{
		{"a tenure grant", "web-1#3f9c2a1b", 10, false, false, false},
		{"a client-go grant", "node-a_5d2c", 15, false, false, false},
		{"a holder over 256 bytes", strings.Repeat("m", 300), 10, false, true, true},
		{"a control character", "bad\x01holder", 10, false, true, true},
		{"no holder, no release mark", "", 3600, false, true, true},
		{"a duration over a day", "mallory", 200000, false, true, false},
		{"an annotation naming another key", "mallory", 10, true, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := kube.NewRecord(lease("42", tc.holder, tc.secs), tenure.Now(), kube.DefaultMaxDrift)
			if err != nil {
				t.Fatal(err)
			}
			f, ok := r.Foreign("k", tc.clash)
			if ok != tc.foreign || (ok && (f.Malformed != tc.malformed || f.Reason == "" || f.Token != 42 || f.Holder != tc.holder)) {
				t.Errorf("Foreign() = %+v, %v; want foreign %v, malformed %v, a reason, token 42 and the holder", f, ok, tc.foreign, tc.malformed)
			}
			if ok && f.TTL < 0 != tc.clash {
				t.Errorf("Foreign().TTL = %s; want negative (never ends) only for a clash", f.TTL)
			}
		})
	}
}
