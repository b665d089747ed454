package chaos

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/tenure-dev/tenure/internal/history"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
)

// target resolves a fault's node. For leaderNode it waits, up to 2·TTL,
// for some node to lead, so that a fault meant for the leader strikes one;
// it falls back to node 0 when nobody leads by then.
func (r *runner) target(ctx context.Context, f Fault) int {
	if f.Node != leaderNode {
		return f.Node
	}
	deadline := time.Now().Add(2 * r.o.TTL)
	for {
		if slot, ok := r.leader(); ok {
			return slot
		}
		if time.Now().After(deadline) || !sleepCtx(ctx, 10*time.Millisecond) {
			return 0
		}
	}
}

// track follows which terms node slot i holds. The caller holds r.mu.
func (r *runner) track(i int, ev history.Event) {
	switch ev.Kind {
	case history.KindElected:
		if r.leading[i] == nil {
			r.leading[i] = map[string]uint64{}
		}
		r.leading[i][ev.Partition] = ev.Token
	case history.KindEnd:
		if r.leading[i][ev.Partition] == ev.Token {
			delete(r.leading[i], ev.Partition)
		}
	}
}

// leader returns the slot of the node whose live term has the highest
// token; in a partitioned run, the node that owns the most partitions.
func (r *runner) leader() (slot int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	best := uint64(0)
	for s, terms := range r.leading {
		for _, t := range terms {
			score := t
			if r.o.Partitions > 0 {
				score = uint64(len(terms))
			}
			if score > best || (score == best && s < slot) {
				slot, best, ok = s, score, true
			}
		}
	}
	return slot, ok
}

// apply applies fault f and returns once it has healed.
func (r *runner) apply(ctx context.Context, f Fault) {
	rec := FaultRecord{Fault: f, Target: -1}
	var np *nodeProc
	if f.Family != FamilyMember && f.Family != FamilyAPIServer {
		rec.Target = r.target(ctx, f)
		r.mu.Lock()
		np = r.procs[rec.Target]
		r.mu.Unlock()
		rec.Holder = np.holder
	}
	rec.Start = Mono()
	wait := func(d time.Duration) { sleepCtx(ctx, d) }
	switch f.Family {
	case FamilyPartition:
		r.cut(rec.Target, tcpproxy.Up, tcpproxy.Down)
		wait(f.Dur)
		r.heal(rec.Target)
	case FamilyBlackhole:
		r.cut(rec.Target, f.Dir)
		wait(f.Dur)
		r.heal(rec.Target)
	case FamilyLatency:
		r.slow(rec.Target, f)
		wait(f.Dur)
		r.heal(rec.Target)
	case FamilyDegrade:
		r.slow(rec.Target, f)
		wait(f.Dur / 3)
		r.cut(rec.Target, tcpproxy.Up, tcpproxy.Down)
		wait(f.Dur - f.Dur/3)
		r.heal(rec.Target)
	case FamilyReset:
		rec.Note = fmt.Sprintf("%d connections reset", r.reset(rec.Target))
	case FamilyPause:
		r.pause(np, rec.Target, f.Dur, wait)
	case FamilyCrash:
		rec.Note = r.crash(ctx, np, rec.Target, f.Dur)
	case FamilyMember:
		rec.Note = r.restartMember(ctx, f)
	case FamilyAPIServer:
		rec.Note = r.restartAPIServer(ctx, f)
	case FamilyClock:
		rec.Note = r.clockFault(np, rec.Target, f, wait)
	}
	rec.End = Mono()
	r.mu.Lock()
	r.faults = append(r.faults, rec)
	r.mu.Unlock()
}

// cut holds the given directions between node slot and the coordinator.
func (r *runner) cut(slot int, dirs ...tcpproxy.Direction) {
	for _, p := range r.coordProx[slot] {
		for _, d := range dirs {
			p.Hold(d)
		}
	}
}

// slow puts f's latencies on node slot's links: Up and Down to and from the
// coordinator, Write on its writes.
func (r *runner) slow(slot int, f Fault) {
	for _, p := range r.coordProx[slot] {
		p.SetLatency(tcpproxy.Up, f.Up)
		p.SetLatency(tcpproxy.Down, f.Down)
	}
	r.regProx[slot].SetLatency(tcpproxy.Up, f.Write)
}

// heal ends every hold and latency on node slot's links.
func (r *runner) heal(slot int) {
	for _, p := range r.coordProx[slot] {
		p.Heal()
	}
	r.regProx[slot].Heal()
}

// reset resets every connection of node slot and returns how many.
func (r *runner) reset(slot int) int {
	n := 0
	for _, p := range r.coordProx[slot] {
		n += p.Reset()
	}
	return n + r.regProx[slot].Reset()
}

// pause holds the node's writes first, so that one is in flight when the
// process stops, then stops it for d; the write is released while the
// process is still stopped, after a newer leader has had time to write.
func (r *runner) pause(np *nodeProc, slot int, d time.Duration, wait func(time.Duration)) {
	rp := r.regProx[slot]
	rp.Hold(tcpproxy.Up)
	wait(3 * r.o.WriteEvery)
	from := Mono()
	_ = np.cmd.Process.Signal(syscall.SIGSTOP)
	wait(d)
	rp.Heal()
	wait(100 * time.Millisecond)
	_ = np.cmd.Process.Signal(syscall.SIGCONT)
	r.mu.Lock()
	r.pauses[np.holder] = append(r.pauses[np.holder], [2]int64{from, Mono()})
	r.mu.Unlock()
}

// crash kills the node process, waits d, and starts a new incarnation in
// its slot. It returns a note when the restart failed.
func (r *runner) crash(ctx context.Context, np *nodeProc, slot int, d time.Duration) string {
	r.mu.Lock()
	np.killed = true
	r.mu.Unlock()
	_ = np.cmd.Process.Kill()
	r.mu.Lock()
	r.kills[np.holder] = Mono()
	r.mu.Unlock()
	<-np.done
	sleepCtx(ctx, d)
	if ctx.Err() != nil {
		return ""
	}
	if err := r.startNode(slot); err != nil {
		return err.Error()
	}
	return ""
}

// clockLead is how long a clock fault runs the node's clock off before
// cutting the node off: long enough for a renewal or two (every TTL/3) to
// be counted on it.
func clockLead(ttl time.Duration) time.Duration { return ttl / 2 }

// clockFault runs node np's clock at f.Rate, its wall clock f.Jump ahead
// of true, for f.Dur: after clockLead, the node is cut off from the
// coordinator (both ways) for the rest of the fault, so that its lease runs
// out and its local deadline, counted on its clock, decides when it stops.
// At the heal its clock is true again: the rate back to 1, the wall clock
// back by f.Jump. It returns a note when the node could not be told.
func (r *runner) clockFault(np *nodeProc, slot int, f Fault, wait func(time.Duration)) string {
	notes := []string{np.setClock(clockControl{On: true, Rate: f.Rate, Wall: f.Jump})}
	wait(clockLead(r.o.TTL))
	r.cut(slot, tcpproxy.Up, tcpproxy.Down)
	wait(f.Dur - clockLead(r.o.TTL))
	r.heal(slot)
	notes = append(notes, np.setClock(clockControl{}))
	return strings.Join(nonEmpty(notes...), "; ")
}
