package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/tenure-dev/tenure/internal/tcpproxy"
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
	// FamilyAPIServer: the Kubernetes API server crashed (SIGKILL), then
	// restarted once it has been down a while: on an API server the run
	// started itself (Options.KubeAPIServer) only.
	FamilyAPIServer = "apiserver"
	// FamilyDegrade: latency to and from the coordinator and on writes for
	// the first third, then a partition from the coordinator while the
	// latency lasts: the last renewal that got through was slow, and the
	// leader writes, slowly, up to its local deadline.
	FamilyDegrade = "degrade"
	// FamilyClock: the node's own clock runs at a rate off by up to
	// MaxDrift (slower seven times in ten) and its wall clock jumps
	// forward; then it is cut off from the coordinator until its lease runs
	// out, so that its local deadline, counted on that clock, decides when
	// it stops; at the heal the clock is true again, the wall clock back.
	FamilyClock = "clock"
)

// Families lists every fault family.
func Families() []string {
	return []string{FamilyPartition, FamilyBlackhole, FamilyLatency, FamilyReset, FamilyPause, FamilyCrash, FamilyMember, FamilyAPIServer, FamilyDegrade, FamilyClock}
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

// leaderNode as a Fault's Node means whichever node leads when the fault
// strikes (node 0 when nobody does).
const leaderNode = -1

// Fault is one scheduled fault.
type Fault struct {
	// At is when the fault strikes, from the start of the run.
	At time.Duration `json:"at"`
	// Family is one of the Family constants.
	Family string `json:"family"`
	// Node is the node struck, or leaderNode.
	Node int `json:"node"`
	// Member is the etcd member stopped (FamilyMember).
	Member int `json:"member,omitempty"`
	// Dur is how long the fault lasts: the partition, the pause, the down
	// time before a restart.
	Dur time.Duration `json:"dur"`
	// Dir is the direction held by a one-way blackhole.
	Dir tcpproxy.Direction `json:"dir,omitempty"`
	// Up and Down are latencies to and from the coordinator; Write is the
	// latency on the node's writes (FamilyLatency).
	Up    time.Duration `json:"up,omitempty"`
	Down  time.Duration `json:"down,omitempty"`
	Write time.Duration `json:"write,omitempty"`
	// Rate is the rate of the node's clock against real time, and Jump how
	// far its wall clock jumps forward (FamilyClock).
	Rate float64       `json:"rate,omitempty"`
	Jump time.Duration `json:"jump,omitempty"`
}

func (f Fault) String() string {
	who := "leader"
	if f.Node != leaderNode {
		who = fmt.Sprintf("node %d", f.Node)
	}
	s := fmt.Sprintf("%7.2fs %-9s", f.At.Seconds(), f.Family)
	switch f.Family {
	case FamilyMember:
		return s + fmt.Sprintf(" member %d for %s", f.Member, f.Dur.Round(time.Millisecond))
	case FamilyAPIServer:
		return s + fmt.Sprintf(" API server down for %s, then restarted", f.Dur.Round(time.Millisecond))
	case FamilyReset:
		return s + " " + who
	case FamilyBlackhole:
		return s + fmt.Sprintf(" %s, %s held for %s", who, f.Dir, f.Dur.Round(time.Millisecond))
	case FamilyLatency, FamilyDegrade:
		return s + fmt.Sprintf(" %s for %s: requests +%s, replies +%s, writes +%s", who, f.Dur.Round(time.Millisecond),
			f.Up.Round(time.Millisecond), f.Down.Round(time.Millisecond), f.Write.Round(time.Millisecond))
	case FamilyClock:
		return s + fmt.Sprintf(" %s for %s: clock at %.4f×, wall clock %s ahead", who, f.Dur.Round(time.Millisecond),
			f.Rate, f.Jump.Round(time.Millisecond))
	default:
		return s + fmt.Sprintf(" %s for %s", who, f.Dur.Round(time.Millisecond))
	}
}

// scheduleConfig is what a fault schedule depends on.
type scheduleConfig struct {
	Seed     uint64
	Duration time.Duration
	Nodes    int
	Members  int
	// APIServer says that the run can restart its API server.
	APIServer bool
	TTL       time.Duration
	Margin    time.Duration
	MaxDrift  float64
	Families  []string
	// Start is when the first fault may strike; default 1.5·TTL, time for
	// a first leader.
	Start time.Duration
	// Tail is the quiet time left at the end so that the last fault's
	// recovery is measured; default 1.5·TTL, more than the liveness bound
	// (TTL + renew interval + retry period).
	Tail time.Duration
	// MaxGap bounds the quiet time between two faults; default 1.5·TTL.
	MaxGap time.Duration
	// LeaderOnly aims every node fault at the leader of the moment
	// (otherwise 70% of them).
	LeaderOnly bool
}

// StrikingFamilies returns the families of fams that can strike a run with
// the given number of embedded etcd members, on an API server the run can
// restart or not: all but member, which needs three members (one stopped
// leaves a quorum), and apiserver, which needs an API server the run
// started itself.
func StrikingFamilies(fams []string, members int, apiserver bool) []string {
	var out []string
	for _, f := range fams {
		if (f == FamilyMember && members < 3) || (f == FamilyAPIServer && !apiserver) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// durations bounds each family's duration, in TTLs.
var durations = map[string][2]float64{
	// At least 1.25 TTL: long enough for the lease to run out.
	FamilyPartition: {1.25, 2},
	FamilyBlackhole: {0.75, 2},
	FamilyLatency:   {1, 2},
	// A third of the time for slow renewals, then at least 1.5 TTL cut
	// off: the lease runs out and another node takes over.
	FamilyDegrade: {2.5, 3},
	FamilyReset:   {0, 0},
	// Longer than the TTL, with a write in flight.
	FamilyPause:  {1.6, 2.2},
	FamilyCrash:  {0.25, 1.5},
	FamilyMember: {0.75, 2.5},
	// Down time before the restart, which takes seconds more.
	FamilyAPIServer: {0.75, 2.5},
	// Half a TTL on the skewed clock, then at least 1.25 TTL cut off.
	FamilyClock: {1.75, 2.5},
}

// drawSchedule draws a run's faults from cfg alone: the same cfg always gives
// the same schedule. Faults do not overlap; each is followed by a quiet gap.
// Families are drawn in rounds, each a shuffle of every family that can
// strike (StrikingFamilies): when the run is long enough for one short
// fault of each (31.2s at the default TTL of 2s with one member, 33.7s
// with three, 2.5s more with the apiserver family), the first round is
// drawn short enough to fit, so that every family strikes at least once.
func drawSchedule(cfg scheduleConfig) []Fault {
	fams := StrikingFamilies(cfg.Families, cfg.Members, cfg.APIServer)
	if len(fams) == 0 {
		return nil
	}
	if cfg.TTL <= 0 {
		return nil // no fault has a length
	}
	s := newScheduler(cfg)
	var out []Fault
	var round []string
	var first bool // in the first round
	for at := s.start; ; {
		if len(round) == 0 {
			first = out == nil
			round = slices.Clone(fams)
			s.rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		fam := round[0]
		round = round[1:]
		// room is the time this fault and its gap may take; in the
		// first round, the rest of the round is kept room for.
		room := s.end - at
		if first && s.reserve(round) <= room-s.shortest(fam) {
			room -= s.reserve(round)
		}
		f := s.draw(fam, at, room)
		if at+f.Dur > s.end {
			break
		}
		out = append(out, f)
		at += f.Dur + s.gap(room-f.Dur)
	}
	return out
}

// scheduler draws faults for Schedule.
type scheduler struct {
	cfg            scheduleConfig
	rng            *rand.Rand
	start, end     time.Duration // faults strike in [start, end]
	minGap, maxGap time.Duration
}

func newScheduler(cfg scheduleConfig) *scheduler {
	s := &scheduler{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x7e5e7e5e))}
	ttl := cfg.TTL
	s.start, s.maxGap = cfg.Start, cfg.MaxGap
	tail := cfg.Tail
	if s.start == 0 {
		s.start = ttl * 3 / 2
	}
	if tail == 0 {
		tail = ttl * 3 / 2
	}
	if s.maxGap == 0 {
		s.maxGap = ttl * 3 / 2
	}
	s.minGap = min(ttl/2, s.maxGap)
	s.end = cfg.Duration - tail
	return s
}

// shortest is the shortest fault of family fam.
func (s *scheduler) shortest(fam string) time.Duration {
	return time.Duration(durations[fam][0] * float64(s.cfg.TTL))
}

// reserve is the time the shortest fault of each of fams, with the
// shortest gap after each, takes.
func (s *scheduler) reserve(fams []string) time.Duration {
	var d time.Duration
	for _, f := range fams {
		d += s.shortest(f) + s.minGap
	}
	return d
}

// between draws a duration in [lo, hi] TTLs.
func (s *scheduler) between(lo, hi float64) time.Duration {
	return time.Duration((lo + (hi-lo)*s.rng.Float64()) * float64(s.cfg.TTL))
}

// duration draws the duration of a fault of family fam, no longer than
// room unless the family's shortest is.
func (s *scheduler) duration(fam string, room time.Duration) time.Duration {
	d := durations[fam]
	return s.between(d[0], max(d[0], min(d[1], float64(room)/float64(s.cfg.TTL))))
}

// gap draws the quiet time after a fault, at most room when room allows
// the shortest gap.
func (s *scheduler) gap(room time.Duration) time.Duration {
	hi := min(s.maxGap, max(room, s.minGap))
	return s.minGap + time.Duration(s.rng.Int64N(int64(hi-s.minGap)+1))
}

// draw draws a fault of family fam at at, lasting at most room when the
// family allows.
func (s *scheduler) draw(fam string, at, room time.Duration) Fault {
	cfg := s.cfg
	f := Fault{At: at, Family: fam, Node: s.rng.IntN(cfg.Nodes)}
	if s.rng.IntN(10) < 7 || cfg.LeaderOnly {
		f.Node = leaderNode
	}
	f.Dur = s.duration(fam, room-s.minGap)
	between := s.between
	switch fam {
	case FamilyBlackhole:
		f.Dir = tcpproxy.Direction(s.rng.IntN(2))
	case FamilyLatency:
		f.Up = between(0, 0.05)
		f.Down = between(0.1, 0.15)
		f.Write = writeLatency(cfg.Margin, s.rng.Float64())
	case FamilyDegrade:
		// Replies late by about the margin: a renewal (a few round trips)
		// still gets through, but takes several times the margin.
		f.Up = between(0, 0.02)
		f.Down = between(0.08, 0.12)
		f.Write = writeLatency(cfg.Margin, s.rng.Float64())
	case FamilyMember:
		f.Node = 0
		f.Member = s.rng.IntN(cfg.Members)
	case FamilyAPIServer:
		f.Node = 0
	case FamilyClock:
		f.Rate = clockRate(cfg.MaxDrift, s.rng.Float64())
		f.Jump = between(0.5, 1)
	}
	return f
}

// clockRate is the rate of a node's clock in a clock fault, drawn from x
// in [0, 1): within maxDrift of true, in its outer half, where the bound
// is tested; slow (the direction that carries a leader past its lease)
// seven times in ten.
func clockRate(maxDrift, x float64) float64 {
	if x < 0.7 {
		return 1 - maxDrift*(0.5+0.5*x/0.7)
	}
	return 1 + maxDrift*(0.5+0.5*(x-0.7)/0.3)
}

// writeLatency is the latency put on a node's writes: between a quarter and
// a half of the margin, well inside what the margin absorbs, long enough
// that a write checked just before a deadline that has no margin lands
// after the lease.
func writeLatency(margin time.Duration, x float64) time.Duration {
	return time.Duration((0.25 + 0.25*x) * float64(margin))
}
