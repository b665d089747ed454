package partition

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/tenure-dev/tenure/internal/identity"

	"github.com/tenure-dev/tenure/internal/display"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/campaign"
)

// A Partition is one partition of a group: a Func is called with one, and
// Group.Partitions lists them all.
type Partition struct {
	// Index is the partition's position in Config.PartitionNames().
	Index int
	// Name is its name ("0" to "P−1" unless Config.Names names them).
	Name string
	// Key is its key: Key(group, Name).
	Key string
}

// Func is the work a member does for one owned partition. It must return
// when ctx is cancelled: when the term ends (its lease lost or its local
// deadline passed, see t.Context()), when the partition is handed over to
// another member, or when the Group leaves. An error matching
// tenure.ErrStaleToken steps the partition down at once ("fenced"); that,
// or any other return while the term is live, releases the partition,
// which this member claims again, with a new token, after RetryPeriod.
// Group.Run runs one for each partition the member owns.
type Func func(ctx context.Context, p Partition, t *tenure.Term) error

// A Group runs one member of a partition group: it joins the group, claims
// the partitions the assignment gives it, runs a Func for each with its own
// term and fencing token, hands partitions over when the assignment moves
// them, and takes over partitions whose owner's lease expired. Create it
// with New and call Run.
type Group struct {
	c       Coordinator
	cfg     Config
	parts   []Partition
	byName  map[string]Partition
	names   []string
	id      string
	log     *slog.Logger
	metrics Metrics
	running atomic.Bool

	mu    sync.Mutex
	snap  Snapshot
	terms []*tenure.Term // of snap.Owned, in order
}

// New returns a Group member for cfg on c (an etcd, postgres, kube or
// memory coordinator). It validates cfg and reports every bad field.
func New(c Coordinator, cfg Config) (*Group, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Group{c: c, cfg: cfg, names: cfg.PartitionNames(), log: cfg.Logger, metrics: cfg.Metrics}
	if g.log == nil {
		g.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if g.metrics == nil {
		g.metrics = nopMetrics{}
	}
	if g.cfg.Instance == "" {
		g.cfg.Instance = identity.NewInstance() // this Group's own: see tenure.Config.Instance
	}
	g.id = tenure.Identity(g.cfg.Holder, g.cfg.Instance)
	g.log = g.log.With("group", cfg.Key, "holder", g.id)
	g.byName = make(map[string]Partition, len(g.names))
	for i, n := range g.names {
		p := Partition{Index: i, Name: n, Key: Key(cfg.Key, n)}
		g.parts = append(g.parts, p)
		g.byName[n] = p
	}
	return g, nil
}

// Config returns the group's configuration.
func (g *Group) Config() Config { return g.cfg }

// Identity is this member's holder identity ("Holder#Instance").
func (g *Group) Identity() string { return g.id }

// Partitions returns every partition of the group, in index order.
func (g *Group) Partitions() []Partition { return append([]Partition(nil), g.parts...) }

// Run joins the group and runs fn for each partition this member owns,
// each in its own goroutine with its own term, until ctx ends. It then
// leaves: it cancels every fn's ctx, stops renewing, waits for every fn to
// return and leaves the group in one call, so that other members take over
// without waiting for a TTL; then it returns ctx.Err(). A fn still running
// at the member's local deadline has its term ended there (its Check
// fails), and keeps the member in the group, and so its partitions out of
// other members' reach, until it returns or the membership's lease lapses
// on the coordinator (about TTL·MaxDrift + Margin after the deadline):
// past that, nothing but the resources' fencing tokens keeps its late
// writes out. Run returns at once for a configuration the coordinator
// refuses, and, having left the group, with a *CountError when a live
// member announced another partition count before this member's first
// view of the membership settled, and with an error matching
// tenure.ErrRefused when the coordinator refused a call for good (a role
// that may not write, credentials it does not accept): a join, a read of
// the membership or the partition table, a claim, a release, or a renewal
// of the membership or its check, whose refusal ends every term first.
// Other failures of the coordinator (timeouts, an unreachable or
// unavailable server, conflicts) are retried without end; without
// Config.Logger they go unreported. Only one Run may be active per Group,
// and per group, identity and coordinator in a process: while one runs,
// another Group's Run for the same group on the same coordinator with the
// same identity (Holder and Instance) returns an error wrapping
// tenure.ErrInvalidConfig that names them (see Config).
func (g *Group) Run(ctx context.Context, fn Func) error {
	if fn == nil {
		return fmt.Errorf("%w: Run needs a function", tenure.ErrInvalidConfig)
	}
	if !g.running.CompareAndSwap(false, true) {
		return errors.New("partition: Group.Run is already running")
	}
	defer g.running.Store(false)
	leave, ok := campaign.Enter(g.c, campaign.Group, g.cfg.Key, g.id)
	if !ok {
		return fmt.Errorf("%w: partition: Group.Run: another Group of this process already runs group %q on this coordinator as %s: "+
			"two members of one identity are one member to the coordinator; give each its own Config.Instance (leave it empty to draw one)",
			tenure.ErrInvalidConfig, g.cfg.Key, display.Holder(g.id))
	}
	defer leave()
	r := newRunner(ctx, g, fn)
	return r.run()
}
