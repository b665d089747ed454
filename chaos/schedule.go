package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Fault families.
const (
	FamilyPartition = "partition" // a node cut off from the coordinator, both ways
	FamilyBlackhole = "blackhole" // one way only: requests or replies held
	FamilyLatency   = "latency"   // added latency to and from the coordinator, and on writes
	FamilyReset     = "reset"     // every connection of a node reset
	FamilyPause     = "pause"     // SIGSTOP longer than the TTL, with a write in flight
	FamilyCrash     = "crash"     // SIGKILL, restart with a new holder
	FamilyMember    = "member"    // an etcd member stopped, then restarted (--members 3)
	// FamilyDegrade: latency to and from the coordinator and on writes for
	// the first third, then a partition from the coordinator while the
	// latency lasts: the last renewal that got through was slow, and the
	// leader writes, slowly, up to its local deadline.
	FamilyDegrade = "degrade"
)

// Families lists every fault family.
func Families() []string {
	return []string{FamilyPartition, FamilyBlackhole, FamilyLatency, FamilyReset, FamilyPause, FamilyCrash, FamilyMember, FamilyDegrade}
}

// ParseFamilies parses a comma-separated list of fault families; "all" means
// every family.
func ParseFamilies(s string) ([]string, error) {
	if s == "" || s == "all" {
		return Families(), nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(Families(), f) {
			return nil, fmt.Errorf("chaos: unknown fault family %q (want a comma-separated list of %s, or all)", f, strings.Join(Families(), ", "))
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// LeaderNode as a Fault's Node means whichever node leads when the fault
// strikes (node 0 when nobody does).
const LeaderNode = -1

// Fault is one scheduled fault.
type Fault struct {
	// At is when the fault strikes, from the start of the run.
	At time.Duration `json:"at"`
	// Family is one of the Family constants.
	Family string `json:"family"`
	// Node is the node struck, or LeaderNode.
	Node int `json:"node"`
	// Member is the etcd member stopped (FamilyMember).
	Member int `json:"member,omitempty"`
	// Dur is how long the fault lasts: the partition, the pause, the down
	// time before a restart.
	Dur time.Duration `json:"dur"`
	// Dir is the direction held by a one-way blackhole.
	Dir Direction `json:"dir,omitempty"`
	// Up and Down are latencies to and from the coordinator; Write is the
	// latency on the node's writes (FamilyLatency).
	Up    time.Duration `json:"up,omitempty"`
	Down  time.Duration `json:"down,omitempty"`
	Write time.Duration `json:"write,omitempty"`
}

func (f Fault) String() string {
	who := "leader"
	if f.Node != LeaderNode {
		who = fmt.Sprintf("node %d", f.Node)
	}
	s := fmt.Sprintf("%7.2fs %-9s", f.At.Seconds(), f.Family)
	switch f.Family {
	case FamilyMember:
		return s + fmt.Sprintf(" member %d for %s", f.Member, f.Dur.Round(time.Millisecond))
	case FamilyReset:
		return s + " " + who
	case FamilyBlackhole:
		return s + fmt.Sprintf(" %s, %s held for %s", who, f.Dir, f.Dur.Round(time.Millisecond))
	case FamilyLatency, FamilyDegrade:
		return s + fmt.Sprintf(" %s for %s: requests +%s, replies +%s, writes +%s", who, f.Dur.Round(time.Millisecond),
			f.Up.Round(time.Millisecond), f.Down.Round(time.Millisecond), f.Write.Round(time.Millisecond))
	default:
		return s + fmt.Sprintf(" %s for %s", who, f.Dur.Round(time.Millisecond))
	}
}

// ScheduleConfig is what a fault schedule depends on.
type ScheduleConfig struct {
	Seed     uint64
	Duration time.Duration
	Nodes    int
	Members  int
	TTL      time.Duration
	Margin   time.Duration
	Families []string
	// Start is when the first fault may strike; default 2·TTL, time for a
	// first leader.
	Start time.Duration
	// Tail is the quiet time left at the end so that the last fault's
	// recovery is measured; default 2·TTL.
	Tail time.Duration
	// MaxGap bounds the quiet time between two faults; default 1.5·TTL.
	MaxGap time.Duration
	// LeaderOnly aims every node fault at the leader of the moment
	// (otherwise 70% of them).
	LeaderOnly bool
}

// Schedule draws a run's faults from cfg alone: the same cfg always gives
// the same schedule. Faults do not overlap; each is followed by a quiet gap.
// The member family is drawn only when Members ≥ 3.
func Schedule(cfg ScheduleConfig) []Fault {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x7e5e7e5e))
	ttl := cfg.TTL
	between := func(lo, hi float64) time.Duration { // in TTLs
		return time.Duration((lo + (hi-lo)*rng.Float64()) * float64(ttl))
	}
	var fams []string
	for _, f := range cfg.Families {
		if f == FamilyMember && cfg.Members < 3 {
			continue
		}
		fams = append(fams, f)
	}
	if len(fams) == 0 {
		return nil
	}
	start, tail, maxGap := cfg.Start, cfg.Tail, cfg.MaxGap
	if start == 0 {
		start = 2 * ttl
	}
	if tail == 0 {
		tail = 2 * ttl
	}
	if maxGap == 0 {
		maxGap = ttl * 3 / 2
	}
	minGap := min(ttl/2, maxGap)
	var out []Fault
	for at := start; ; {
		f := Fault{At: at, Family: fams[rng.IntN(len(fams))], Node: rng.IntN(cfg.Nodes)}
		if rng.IntN(10) < 7 || cfg.LeaderOnly {
			f.Node = LeaderNode
		}
		f = shape(f, cfg, between, rng)
		if at+f.Dur+tail > cfg.Duration {
			break
		}
		out = append(out, f)
		at += f.Dur + minGap + time.Duration(rng.Int64N(int64(maxGap-minGap)+1))
	}
	return out
}

// shape draws the parameters of fault f from rng; between draws a duration
// in TTLs.
func shape(f Fault, cfg ScheduleConfig, between func(lo, hi float64) time.Duration, rng *rand.Rand) Fault {
	switch f.Family {
	case FamilyPartition:
		// At least 1.25 TTL: long enough for the lease to run out.
		f.Dur = between(1.25, 2)
	case FamilyBlackhole:
		f.Dur = between(0.75, 2)
		f.Dir = Direction(rng.IntN(2))
	case FamilyLatency:
		f.Dur = between(1, 2)
		f.Up = between(0, 0.05)
		f.Down = between(0.1, 0.15)
		f.Write = writeLatency(cfg.Margin, rng.Float64())
	case FamilyDegrade:
		// A third of the time for slow renewals, then at least 1.5 TTL
		// cut off: the lease runs out and another node takes over.
		// Replies late by about the margin: a renewal (a few round trips)
		// still gets through, but takes several times the margin.
		f.Dur = between(2.5, 3)
		f.Up = between(0, 0.02)
		f.Down = between(0.08, 0.12)
		f.Write = writeLatency(cfg.Margin, rng.Float64())
	case FamilyReset:
		f.Dur = 0
	case FamilyPause:
		f.Dur = between(1.6, 2.2)
	case FamilyCrash:
		f.Dur = between(0.25, 1.5)
	case FamilyMember:
		f.Node = 0
		f.Member = rng.IntN(cfg.Members)
		f.Dur = between(1, 3)
	}
	return f
}

// writeLatency is the latency put on a node's writes: between a quarter and
// a half of the margin, well inside what the margin absorbs, long enough
// that a write checked just before a deadline that has no margin lands
// after the lease.
func writeLatency(margin time.Duration, x float64) time.Duration {
	return time.Duration((0.25 + 0.25*x) * float64(margin))
}
