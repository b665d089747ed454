package memory_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestSentBeforeLatency: every call that starts or extends a lease
// reads Sent when it is made, before the request crosses the slow link, so
// Sent + TTL never passes the moment another holder can be granted the
// key (or claim the member's partitions): that moment is TTL after the
// request was applied, later still. Partition grants carry the Sent of the
// membership they ride on.
func TestSentBeforeLatency(t *testing.T) {
	const ttl = 3 * time.Second
	for _, lat := range []struct{ request, reply time.Duration }{
		{0, 0}, {700 * time.Millisecond, 0}, {0, 700 * time.Millisecond}, {400 * time.Millisecond, 300 * time.Millisecond},
	} {
		t.Run((lat.request).String()+"+"+(lat.reply).String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCoord(t)
				c.SetLatency("a", lat.request, lat.reply)
				// wantSent checks that sent was read at made, and that the
				// key (or partition) stays out of b's reach until sent + TTL.
				wantSent := func(what string, sent tenure.Instant, made time.Time, free func() bool) {
					t.Helper()
					if !sent.Time().Equal(made) {
						t.Fatalf("%s: Sent = %s after the call was made; want 0 (read before the request crossed the link)", what, sent.Time().Sub(made))
					}
					time.Sleep(time.Until(sent.Time().Add(ttl)) - time.Nanosecond)
					if free() {
						t.Fatalf("%s: free for another holder %s after Sent; want not before Sent + TTL (%s)", what, time.Since(sent.Time()), ttl)
					}
				}

				made := time.Now()
				g, err := c.Acquire(t.Context(), "k", "a#1", ttl)
				if err != nil {
					t.Fatal(err)
				}
				wantSent("Acquire", g.Sent, made, func() bool { return leaderOf(t, c, "k") != "a#1" })

				made = time.Now()
				if g, err = c.Renew(t.Context(), g); err != nil {
					t.Fatal(err)
				}
				wantSent("Renew", g.Sent, made, func() bool { return leaderOf(t, c, "k") != "a#1" })

				made = time.Now()
				m, err := c.JoinGroup(t.Context(), "grp", "a#1", ttl, 0)
				if err != nil {
					t.Fatal(err)
				}
				res, err := c.ClaimPartitions(t.Context(), m, []string{"p"})
				if err != nil || res[0].Err != nil {
					t.Fatalf("ClaimPartitions() = %+v, %v", res, err)
				}
				if res[0].Grant.Sent != m.Sent {
					t.Fatalf("partition grant's Sent differs from its membership's")
				}
				b, err := c.JoinGroup(t.Context(), "grp", "b#1", time.Hour, 0)
				if err != nil {
					t.Fatal(err)
				}
				claimable := func() bool {
					r, err := c.ClaimPartitions(t.Context(), b, []string{"p"})
					if err != nil {
						t.Fatal(err)
					}
					return r[0].Err == nil
				}
				wantSent("JoinGroup", m.Sent, made, claimable)

				made = time.Now()
				if m, err = c.RenewMember(t.Context(), m); err != nil {
					t.Fatal(err)
				}
				wantSent("RenewMember", m.Sent, made, claimable)
			})
		})
	}
}
