package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/internal/plant"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
)

// Options configure a verification run. Zero values mean the defaults
// documented on each field.
type Options struct {
	// Seed picks the fault schedule. Default 1.
	Seed uint64
	// Duration of the run. Default 120s.
	Duration time.Duration
	// Nodes is the number of node processes. Default 3.
	Nodes int
	// Members is the number of embedded etcd members: 1 (default) or 3.
	Members int
	// Endpoints names an external etcd cluster (http:// only) instead of
	// embedded members.
	Endpoints []string
	// Postgres is a PostgreSQL DSN to use instead of etcd.
	Postgres string
	// TTL is the lease TTL. Default 2s. etcd grants whole seconds.
	TTL time.Duration
	// Margin is the elector's safety margin. Default TTL/10.
	Margin time.Duration
	// MaxDrift is the elector's assumed clock-rate drift. Default 0.01.
	MaxDrift float64
	// WriteEvery is how often a leader writes. Default 30ms.
	WriteEvery time.Duration
	// ReadEvery is how often the runner reads the register. Default 50ms.
	ReadEvery time.Duration
	// Families are the fault families drawn. Default all, or with a Plant,
	// the families that expose it (PlantFamilies), every fault aimed at
	// the leader.
	Families []string
	// Plant is the planted bug, plant.None for the node as shipped.
	Plant string
	// Schedule overrides the drawn fault schedule when non-nil.
	Schedule []Fault
	// FaultStart, FaultTail and MaxGap tune the schedule (see
	// scheduleConfig).
	FaultStart, FaultTail, MaxGap time.Duration
	// LeaderOnly aims every node fault at the leader of the moment.
	LeaderOnly bool
	// Key is the key the nodes compete for. Default "tenure/verify".
	Key string
	// NodeCommand returns the command that runs one node with the JSON spec.
	// Required. "tenure verify-node --spec JSON" re-executes the tenure
	// binary.
	NodeCommand func(spec string) *exec.Cmd
	// Dir holds the embedded members' data. Default a temporary directory,
	// removed at the end.
	Dir string
	// Progress, when not nil, receives a progress line every half second
	// (with a carriage return, for a terminal).
	Progress io.Writer
	// CheckTimeout bounds the linearizability check. Default 60s.
	CheckTimeout time.Duration
	// Partitions, when positive, makes every node a member of one
	// partition group of that many partitions under Key (package
	// partition) instead of an Elector of Key; each partition has its own
	// resource in the register, and the checkers judge each partition as
	// they judge a single key (see partitionHistory). Default 0: one key.
	Partitions int
}

func (o Options) withDefaults() Options {
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Duration == 0 {
		o.Duration = 120 * time.Second
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Members == 0 {
		o.Members = 1
	}
	if o.TTL == 0 {
		o.TTL = 2 * time.Second
	}
	if o.Margin == 0 {
		o.Margin = o.TTL / 10
	}
	if o.MaxDrift == 0 {
		o.MaxDrift = 0.01
	}
	if o.WriteEvery == 0 {
		o.WriteEvery = 30 * time.Millisecond
	}
	if o.ReadEvery == 0 {
		o.ReadEvery = 50 * time.Millisecond
	}
	if o.Families == nil && o.Plant != plant.None {
		o.Families, o.LeaderOnly = PlantFamilies(o.Plant), true
	}
	if o.Families == nil {
		o.Families = Families()
	}
	if o.Key == "" {
		o.Key = "tenure/verify"
	}
	if o.CheckTimeout == 0 {
		o.CheckTimeout = 60 * time.Second
	}
	return o
}

// Validate reports every problem with o (after defaults).
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.Nodes < 2 || o.Nodes > 9 {
		bad("Options.Nodes (%d) must be between 2 and 9", o.Nodes)
	}
	if o.Members != 1 && o.Members != 3 {
		bad("Options.Members (%d) must be 1 or 3", o.Members)
	}
	if (len(o.Endpoints) > 0 || o.Postgres != "") && o.Members != 1 {
		bad("Options.Members (%d) applies to the embedded coordinator only", o.Members)
	}
	if len(o.Endpoints) > 0 && o.Postgres != "" {
		bad("Options.Endpoints and Options.Postgres are exclusive")
	}
	if o.Duration < 5*time.Second {
		bad("Options.Duration (%s) must be at least 5s", o.Duration)
	}
	if o.NodeCommand == nil {
		bad("Options.NodeCommand is nil")
	}
	if err := checkPlant(o.Plant); err != nil {
		errs = append(errs, err)
	}
	for _, ep := range o.Endpoints {
		if _, err := hostPort(ep); err != nil {
			bad("Options.Endpoints: %q: %v", ep, err)
		}
	}
	if o.Partitions < 0 || o.Partitions > maxResources {
		bad("Options.Partitions (%d) must be between 0 and %d", o.Partitions, maxResources)
	}
	spec := NodeSpec{Key: o.Key, Holder: "n0.1", TTL: o.TTL, Margin: o.Margin, MaxDrift: o.MaxDrift, Partitions: o.Partitions}
	if o.Partitions > 0 {
		if err := spec.groupConfig().Validate(); err != nil {
			errs = append(errs, err)
		}
	} else if err := spec.electorConfig().Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// hostPort returns the host:port of an http:// URL or a host:port pair.
func hostPort(ep string) (string, error) {
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil {
			return "", err
		}
		if u.Scheme != "http" {
			return "", fmt.Errorf("scheme %q: only http:// endpoints can be proxied", u.Scheme)
		}
		ep = u.Host
	}
	if _, _, err := net.SplitHostPort(ep); err != nil {
		return "", err
	}
	return ep, nil
}

// FaultRecord is a fault as it was applied.
type FaultRecord struct {
	Fault
	// Target is the node struck (resolved from leaderNode), -1 for a member.
	Target int    `json:"target"`
	Holder string `json:"holder,omitempty"`
	// Start and End are when the fault began and healed (Mono).
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	// Note says what was done.
	Note string `json:"note,omitempty"`
}

// History is everything a run recorded.
type History struct {
	Options   Options       `json:"-"`
	Origin    int64         `json:"origin"` // Mono at the start
	Finish    int64         `json:"finish"` // Mono at the end of the fault phase
	Events    []Event       `json:"events"`
	Decisions []Decision    `json:"decisions"`
	Reads     []Read        `json:"reads"`
	Faults    []FaultRecord `json:"faults"`
	// Kills maps a holder to when it was SIGKILLed (Mono).
	Kills map[string]int64 `json:"kills"`
	// Pauses are the SIGSTOP windows, per holder.
	Pauses map[string][][2]int64 `json:"pauses"`
	// NodeErrors are the tails of the standard error of nodes that exited
	// unexpectedly.
	NodeErrors []string `json:"node_errors,omitempty"`
}

type nodeProc struct {
	slot   int
	holder string
	cmd    *exec.Cmd
	done   chan struct{}
	stderr *tailBuffer
	killed bool
}

type runner struct {
	o          Options
	origin     int64
	reg        *Register
	coordProx  [][]*tcpproxy.Proxy // [node][member]
	regProx    []*tcpproxy.Proxy
	members    []*embedded.Server
	memberCfg  []embedded.Config
	cleanupDir string

	mu       sync.Mutex
	events   []Event
	reads    []Read
	faults   []FaultRecord
	kills    map[string]int64
	pauses   map[string][][2]int64
	procs    []*nodeProc
	gens     []int
	leading  map[int]map[string]uint64 // slot → partition ("" for the key) → token of its live term
	nodeErrs []string
	readers  sync.WaitGroup // stdout readers
}

// Run runs one verification as o describes and returns its history. It
// returns early, with what was recorded, when ctx ends.
func Run(ctx context.Context, o Options) (*History, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	r := &runner{o: o, kills: map[string]int64{}, pauses: map[string][][2]int64{}, leading: map[int]map[string]uint64{}}
	defer r.closeAll()

	targets, err := r.startCoordinator(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.startProxies(targets); err != nil {
		return nil, err
	}
	r.gens = make([]int, o.Nodes)
	r.procs = make([]*nodeProc, o.Nodes)

	r.origin = Mono()
	start := time.Now()
	for i := range o.Nodes {
		if err := r.startNode(i); err != nil {
			r.stopNodes()
			return nil, err
		}
	}

	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(1)
	go func() { defer bg.Done(); r.readLoop(stop) }()
	if o.Progress != nil {
		bg.Add(1)
		go func() { defer bg.Done(); r.progressLoop(stop, start) }()
	}

	for _, f := range o.schedule() {
		if !sleepCtx(ctx, time.Until(start.Add(f.At))) {
			break
		}
		r.apply(ctx, f)
	}
	sleepCtx(ctx, time.Until(start.Add(o.Duration)))
	finish := Mono()
	close(stop)
	bg.Wait()
	r.stopNodes()
	r.readers.Wait()

	r.mu.Lock()
	defer r.mu.Unlock()
	h := &History{
		Options: o, Origin: r.origin, Finish: finish,
		Events: r.events, Decisions: r.reg.Decisions(), Reads: r.reads, Faults: r.faults,
		Kills: r.kills, Pauses: r.pauses, NodeErrors: r.nodeErrs,
	}
	if o.Progress != nil {
		fmt.Fprint(o.Progress, "\r\033[K")
	}
	return h, ctx.Err()
}

// schedule is o.Schedule, or the schedule drawn from o.
func (o Options) schedule() []Fault {
	if o.Schedule != nil {
		return o.Schedule
	}
	return drawSchedule(scheduleConfig{Seed: o.Seed, Duration: o.Duration, Nodes: o.Nodes, Members: o.Members,
		TTL: o.TTL, Margin: o.Margin, Families: o.Families, Start: o.FaultStart, Tail: o.FaultTail, MaxGap: o.MaxGap, LeaderOnly: o.LeaderOnly})
}

// startProxies starts the register service and, for each node, a proxy to
// every coordinator target and one to the register.
func (r *runner) startProxies(targets []string) error {
	var err error
	if r.reg, err = StartRegister(); err != nil {
		return err
	}
	for range r.o.Nodes {
		var ps []*tcpproxy.Proxy
		for _, t := range targets {
			p, err := tcpproxy.New("tcp", t)
			if err != nil {
				return err
			}
			ps = append(ps, p)
		}
		r.coordProx = append(r.coordProx, ps)
		p, err := tcpproxy.New("tcp", r.reg.Addr())
		if err != nil {
			return err
		}
		r.regProx = append(r.regProx, p)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// startCoordinator starts embedded members (or names the external
// coordinator) and returns the addresses to proxy to.
func (r *runner) startCoordinator(ctx context.Context) ([]string, error) {
	o := r.o
	switch {
	case o.Postgres != "":
		cfg, err := pgx.ParseConfig(o.Postgres)
		if err != nil {
			return nil, fmt.Errorf("chaos: postgres DSN: %w", err)
		}
		if strings.HasPrefix(cfg.Host, "/") {
			return nil, errors.New("chaos: postgres DSN names a Unix socket; the proxies need host and port")
		}
		return []string{net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))}, nil
	case len(o.Endpoints) > 0:
		var out []string
		for _, ep := range o.Endpoints {
			hp, _ := hostPort(ep)
			out = append(out, hp)
		}
		return out, nil
	}
	return r.startMembers(ctx)
}

// startMembers starts the embedded etcd members and returns their client
// addresses.
func (r *runner) startMembers(ctx context.Context) ([]string, error) {
	o := r.o
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "tenure-verify-")
		if err != nil {
			return nil, err
		}
		dir = d
		r.o.Dir = d
		r.cleanupDir = d
	}
	if o.Members == 1 {
		peers, err := embedded.FreeLocalURLs(1)
		if err != nil {
			return nil, err
		}
		r.memberCfg = []embedded.Config{{Dir: dir + "/m1", Name: "m1", ClientURLs: []string{"http://127.0.0.1:0"}, PeerURLs: peers}}
	} else {
		cfgs, err := embedded.LocalCluster(dir, o.Members)
		if err != nil {
			return nil, err
		}
		r.memberCfg = cfgs
	}
	r.members = make([]*embedded.Server, len(r.memberCfg))
	errs := make([]error, len(r.memberCfg))
	var wg sync.WaitGroup
	for i, cfg := range r.memberCfg {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.members[i], errs[i] = embedded.Start(ctx, cfg)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []string
	for i, s := range r.members {
		hp, _ := hostPort(s.Endpoints()[0])
		out = append(out, hp)
		r.memberCfg[i] = s.Config()
		r.memberCfg[i].ClientURLs = []string{"http://" + hp}
	}
	return out, nil
}

// proxiedDSN returns dsn with its host and port replaced by addr.
func proxiedDSN(dsn, addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			u.Host = addr
			return u.String()
		}
	}
	return dsn + " host=" + host + " port=" + port
}

// startNode starts a new incarnation of node slot i with a new holder.
func (r *runner) startNode(i int) error {
	r.mu.Lock()
	r.gens[i]++
	holder := fmt.Sprintf("n%d.%d", i, r.gens[i])
	r.mu.Unlock()
	spec := NodeSpec{
		Holder: holder, Key: r.o.Key,
		Register: "http://" + r.regProx[i].Addr(),
		TTL:      r.o.TTL, Margin: r.o.Margin, MaxDrift: r.o.MaxDrift,
		WriteEvery: r.o.WriteEvery, Plant: r.o.Plant, Partitions: r.o.Partitions,
	}
	if r.o.Postgres != "" {
		spec.Postgres = proxiedDSN(r.o.Postgres, r.coordProx[i][0].Addr())
	} else {
		for _, p := range r.coordProx[i] {
			spec.Endpoints = append(spec.Endpoints, "http://"+p.Addr())
		}
	}
	js, _ := json.Marshal(spec)
	cmd := r.o.NodeCommand(string(js))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	tail := &tailBuffer{max: 4 << 10}
	cmd.Stderr = tail
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("chaos: start node %s: %w", holder, err)
	}
	np := &nodeProc{slot: i, holder: holder, cmd: cmd, done: make(chan struct{}), stderr: tail}
	r.mu.Lock()
	r.procs[i] = np
	delete(r.leading, i)
	r.mu.Unlock()
	r.readers.Add(1)
	go func() {
		defer r.readers.Done()
		r.readEvents(np, stdout)
	}()
	return nil
}

// readEvents records the events node np writes on stdout until it exits,
// then reaps it.
func (r *runner) readEvents(np *nodeProc, stdout io.Reader) {
	i := np.slot
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var ev Event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		ev.Node = i
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.track(i, ev)
		r.mu.Unlock()
	}
	err := np.cmd.Wait()
	r.mu.Lock()
	if !np.killed && err != nil {
		r.nodeErrs = append(r.nodeErrs, fmt.Sprintf("node %s: %v: %s", np.holder, err, np.stderr.String()))
	}
	if r.procs[i] == np {
		delete(r.leading, i)
	}
	r.mu.Unlock()
	close(np.done)
}

// stopNodes asks every node to resign (SIGTERM) and kills those that have
// not exited after 2·TTL.
func (r *runner) stopNodes() {
	r.mu.Lock()
	procs := slices.Clone(r.procs)
	for _, p := range procs {
		if p != nil {
			p.killed = true
		}
	}
	r.mu.Unlock()
	for _, p := range procs {
		if p == nil {
			continue
		}
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		if p == nil {
			continue
		}
		select {
		case <-p.done:
		case <-time.After(2*r.o.TTL + time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

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
func (r *runner) track(i int, ev Event) {
	switch ev.Kind {
	case KindElected:
		if r.leading[i] == nil {
			r.leading[i] = map[string]uint64{}
		}
		r.leading[i][ev.Partition] = ev.Token
	case KindEnd:
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
	if f.Family != FamilyMember {
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

// restartMember stops etcd member f.Member for f.Dur, then starts it again.
func (r *runner) restartMember(ctx context.Context, f Fault) string {
	if f.Member >= len(r.members) {
		return ""
	}
	r.members[f.Member].Close()
	sleepCtx(ctx, f.Dur)
	s, err := embedded.Start(context.WithoutCancel(ctx), r.memberCfg[f.Member])
	if err != nil {
		return "restart failed: " + err.Error()
	}
	r.members[f.Member] = s
	return ""
}

// readLoop reads the register every ReadEvery until stop is closed.
func (r *runner) readLoop(stop <-chan struct{}) {
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	t := time.NewTicker(r.o.ReadEvery)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		rd := Read{Call: Mono()}
		path := "/read"
		if r.o.Partitions > 0 { // one partition per tick, in turn
			rd.Partition = strconv.Itoa(n % r.o.Partitions)
			path = "/p/" + rd.Partition + path
		}
		resp, err := client.Get("http://" + r.reg.Addr() + path)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			rd.OK = resp.StatusCode == http.StatusOK
			rd.Value = string(b)
			rd.Token, _ = strconv.ParseUint(resp.Header.Get(headerClaimedToken), 10, 64)
		}
		rd.Return = Mono()
		r.mu.Lock()
		r.reads = append(r.reads, rd)
		r.mu.Unlock()
	}
}

func (r *runner) progressLoop(stop <-chan struct{}, start time.Time) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		acc, rej := r.reg.counts()
		r.mu.Lock()
		nf := len(r.faults)
		r.mu.Unlock()
		fmt.Fprintf(r.o.Progress, "\r\033[Kverify: %s/%s  faults %d  writes accepted %d, rejected %d",
			time.Since(start).Round(time.Second), r.o.Duration, nf, acc, rej)
	}
}

func (r *runner) closeAll() {
	for _, ps := range r.coordProx {
		for _, p := range ps {
			p.Close()
		}
	}
	for _, p := range r.regProx {
		p.Close()
	}
	if r.reg != nil {
		r.reg.Close()
	}
	for _, s := range r.members {
		if s != nil {
			s.Close()
		}
	}
	if r.cleanupDir != "" {
		os.RemoveAll(r.cleanupDir)
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
