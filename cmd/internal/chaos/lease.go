package chaos

import (
	"math"
	"time"

	"github.com/tenure-dev/tenure/internal/history"
)

// leaseKey names one term of one holder.
type leaseKey struct {
	holder string
	token  uint64
}

// lease is one successful acquire or renewal.
type lease struct {
	sent, reply int64
	ttl         time.Duration
	// rate is the rate of the node's clock the lease was counted on
	// (0: a true clock).
	rate float64
}

// leasesOf returns every successful acquire and renewal, per term.
func leasesOf(evs []history.Event) map[leaseKey][]lease {
	out := map[leaseKey][]lease{}
	for _, ev := range evs {
		if (ev.Kind == history.KindAcquire || ev.Kind == history.KindRenew) && ev.OK {
			k := leaseKey{ev.Holder, ev.Token}
			out[k] = append(out[k], lease{ev.Sent, ev.At, ev.TTL, ev.Rate})
		}
	}
	return out
}

// leaseEnd is the earliest the coordinator may expire the term's lease, as
// known at time at: the end of the last lease whose reply came by then
// (see end). It returns math.MinInt64 when no lease is known.
func leaseEnd(ls []lease, at int64, maxDrift float64) int64 {
	end := int64(math.MinInt64)
	for _, l := range ls {
		if l.reply <= at {
			end = max(end, l.end(maxDrift))
		}
	}
	return end
}

// end is the earliest the coordinator may expire l. The design assumes
// the coordinator's clock runs at most maxDrift faster than the node's:
// while clock rates stay within that bound, the lease may end
// TTL·(1−maxDrift) after its send on the node's clock, which is
// TTL·(1−maxDrift)/rate in real time for a node clock running at rate (1
// for a true clock, the run's clock faults set others). It never ends
// later than the TTL the real coordinator keeps on this machine's clock:
// a node clock slower than the bound allows is judged against the lease
// the coordinator really keeps.
func (l lease) end(maxDrift float64) int64 {
	rate := l.rate
	if rate == 0 {
		rate = 1
	}
	return l.sent + int64(float64(l.ttl)*min(1, (1-maxDrift)/rate))
}

// checkLeaseOverrun reports every accepted write that landed after the
// lease its writer was acting on could have expired. Writes in flight
// across a pause of their process that landed after their lease are not
// counted, only returned (value → accepted), accepted or rejected: no
// lease can stop them, fencing decides them.
func checkLeaseOverrun(h *History) (c history.Check, late map[string]bool) {
	c = history.Check{Name: "lease overrun", Safety: true}
	late = map[string]bool{}
	starts := history.IndexWrites(h.Events).Starts
	leases := leasesOf(h.Events)
	for _, d := range h.Decisions {
		ws, ok := starts[d.Value]
		if !ok {
			continue
		}
		end := leaseEnd(leases[leaseKey{ws.Holder, ws.Token}], d.At, h.Options.MaxDrift)
		switch {
		case d.At <= end:
		case pausedDuring(h.Pauses[ws.Holder], ws.At, d.At):
			late[d.Value] = d.Accepted
		case !d.Accepted:
		case end == math.MinInt64:
			c.AddAt(d.At, ws.Node, "%.3fs: write %s (token %d) accepted with no lease known for it", h.Rel(d.At), d.Value, d.Token)
		default:
			c.AddAt(d.At, ws.Node, "%.3fs: write %s (token %d, sent %.3fs) landed %s after its lease could have expired (%.3fs)",
				h.Rel(d.At), d.Value, d.Token, h.Rel(ws.At), time.Duration(d.At-end).Round(time.Millisecond), h.Rel(end))
		}
	}
	return c, late
}

func pausedDuring(ws [][2]int64, from, to int64) bool {
	for _, w := range ws {
		if w[0] <= to && from <= w[1] {
			return true
		}
	}
	return false
}
