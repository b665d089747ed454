package chaos

import (
	"fmt"
	"strings"
)

// entry is one term of the HTML report's glossary.
type entry struct {
	ID, Term, Text string
}

// familyWords says what each fault family does, for the glossary.
var familyWords = map[string]string{
	FamilyPartition: "the node is cut off from the coordinator, both ways, for 1.25 to 2 TTL: it must stop at its local deadline, before another node is granted the key.",
	FamilyBlackhole: "one direction between the node and the coordinator is held: its requests, or their replies.",
	FamilyLatency:   "requests, replies and writes are slowed: deadlines count from the send, not the reply.",
	FamilyReset:     "every connection of the node is reset.",
	FamilyPause:     "the node is stopped (SIGSTOP) for longer than the TTL, with a write in flight (see late writes across a pause).",
	FamilyCrash:     "the node is killed (SIGKILL) and restarted in its slot as a new process, with a new holder.",
	FamilyMember:    "an etcd member is stopped, then restarted (--members 3): the band spans every lane.",
	FamilyAPIServer: "the Kubernetes API server is killed (SIGKILL), then restarted, on the same etcd (--kube-apiserver): every node loses it at once; the band spans every lane.",
	FamilyDegrade:   "slow renewals and writes, then a partition: the leader writes, slowly, up to its local deadline.",
	FamilyClock: "the node's own clock runs off its rate (within --max-drift) and its wall clock jumps forward; then the node is cut off until its lease runs out, " +
		"so that its deadline, counted on that clock, decides when it stops; at the heal its wall clock jumps back. " +
		"Nothing in tenure reads the wall clock for a decision, so the jumps must change nothing.",
}

// checkWords says what each checker reports, for the glossary.
var checkWords = map[string]string{
	"stale writes accepted": "the register accepted a write whose token was lower than one it had accepted before. Must be 0.",
	"token order":           "a term began after another had ended without a greater token.",
	"safe-lease overlap":    "two nodes' terms, each from its election to the earlier of its end and its local deadline, overlap.",
	"lease overrun":         "an accepted write landed after the lease its writer acted on could have expired at the coordinator: its last request's send plus TTL·(1−max drift), counted at the rate of the node's clock, never later than the TTL itself. Late writes across a pause are not counted: fencing decides those.",
	"linearizability":       "the register's history of writes and reads is not linearizable (checked by porcupine); no verdict in time also fails.",
}

// glossary returns the report page's glossary: the timeline's marks, the
// lane names, late writes across a pause, the fault families and the
// checkers.
func glossary(r *Report) []entry {
	out := []entry{
		{"glossary-lanes", "Lanes: n0.1, n0.1–n0.2", "One lane per node slot. nS.G is slot S's G-th process, and the holder name it ran under: n0.1 is slot 0's first process. " +
			"A crash restarts the slot as a new process with a new holder (n0.2); the lane is then labelled with the first and last (n0.1–n0.2)."},
		{"glossary-term", "Term (blue bar, with its token)", "One node's leadership: from its election to the earlier of its end and its local deadline. The number is its fencing token, which every write of the term carries."},
		{"glossary-renewal", "Renewal (dot above the term; hollow: failed)", "A renewal of the term's lease, where its reply came; a hollow dot is one that failed or found the grant lost."},
		{"glossary-deadline", "Local deadline (dashed line)", "When the node must stop acting: the send of the request that last started or extended its lease, plus TTL·(1−max drift) − margin, on the node's own clock."},
		{"glossary-writes", "Writes (below the term)", "Where the register decided each write: accepted (green tick), rejected (orange triangle), or never decided with no answer to its writer (grey square)."},
		{"glossary-late-writes", "Late writes across a pause", "A pause (SIGSTOP, as a long GC or a frozen VM would) stops a leader with a write already sent. " +
			"The write is held in the network until the node's lease has run out and another node leads, then lands: after its lease. " +
			"No lease can stop such a write; only the resource's fencing can. The register rejects it when a newer token has written " +
			"(the orange triangle on the paused node's lane right after the pause band), and accepts it when none has yet (the register's order is still the tokens' order). " +
			"The summary counts them on the line \"late writes across a pause\". They are not violations: they are fencing doing its job."},
		{"glossary-violation", "Safety violation (red diamond, numbered)", "A finding of a safety checker, at its time on its lane; hover for the explanation, or read the list under the chart."},
	}
	for _, f := range Families() {
		out = append(out, entry{"glossary-fault-" + f, "Fault: " + f, fmt.Sprintf("A band in its colour over the lane of the node it struck: %s", familyWords[f])})
	}
	for _, c := range r.Checks() {
		out = append(out, entry{"glossary-check-" + strings.ReplaceAll(c.Name, " ", "-"), "Checker: " + c.Name, "Reports when " + checkWords[c.Name]})
	}
	return append(out,
		entry{"glossary-liveness", "Recovery after faults, time with no leader", "Measured, not judged: the time from each fault's heal to the next accepted write (the bound is TTL + renew interval + retry period), and the share of the run with no live term."},
		entry{"glossary-inconclusive", "Inconclusive", "A run in which no node was ever elected, or the register accepted fewer than " + fmt.Sprint(MinAcceptedWrites) + " writes, proved nothing: no violation, and no pass either."})
}

// laneTitle explains a lane's label: "n0.1", or "n0.1–n0.3" after
// restarts.
func laneTitle(node int, label string) string {
	gen := func(h string) string { return h[strings.LastIndex(h, ".")+1:] }
	first, last, ranged := strings.Cut(label, "–")
	what := "no process of it led or was struck"
	switch {
	case ranged:
		what = fmt.Sprintf("its processes %s to %s", gen(first), gen(last))
	case strings.Contains(label, "."):
		what = "its process " + gen(first)
	}
	return fmt.Sprintf("%s: node slot %d, %s (nS.G is slot S's G-th process; a crash restarts the slot as a new one)", label, node, what)
}
