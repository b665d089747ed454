package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tenure-dev/tenure"
)

// TestWatchState: each leadership is printed once; a late answer older
// than what was printed is dropped; an outage is reported once, and its
// end once, after which the state is printed again.
func TestWatchState(t *testing.T) {
	var buf bytes.Buffer
	st := &watchState{p: &watchPrinter{w: &buf, asJSON: true, enc: json.NewEncoder(&buf)}, scope: watchScope{key: "k"}}
	held := func(token uint64) recorded {
		return recorded{LeaderEvent: tenure.LeaderEvent{Key: "k", Held: true, Grant: tenure.Grant{Key: "k", Holder: "web-1#abc", Token: token, TTL: 10e9}}}
	}
	free := recorded{LeaderEvent: tenure.LeaderEvent{Key: "k"}}
	down := errors.New("connection refused")
	for _, step := range []func() error{
		func() error { return st.probed(nil, free) },    // no_leader
		func() error { return st.leader(held(5)) },      // leader 5
		func() error { return st.probed(nil, held(5)) }, // same: nothing
		func() error { return st.leader(free) },         // no_leader
		func() error { return st.probed(nil, held(5)) }, // late answer: nothing
		func() error { return st.leader(held(7)) },      // leader 7
		func() error { return st.probed(nil, held(6)) }, // older: nothing
		func() error { return st.probed(down, free) },   // unreachable
		func() error { return st.probed(down, free) },   // still: nothing
		func() error { return st.probed(nil, held(7)) }, // reachable, leader 7 again
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var w WatchLine
		if err := json.Unmarshal([]byte(l), &w); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		e := w.Event
		if w.Event == "leader" {
			if w.Holder != "web-1" || w.Instance != "abc" || w.TTLMS == nil || *w.TTLMS != 10000 {
				t.Errorf("leader line %q; want holder web-1, instance abc, ttl_ms 10000", l)
			}
			e += " " + string(rune('0'+w.Token))
		}
		got = append(got, e)
	}
	want := []string{"no_leader", "leader 5", "no_leader", "leader 7", "unreachable", "reachable", "leader 7"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("watch printed %q; want %q", got, want)
	}
}
