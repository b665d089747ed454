package chaos

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/internal/history"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
)

type runner struct {
	o          Options
	origin     int64
	reg        *Register
	coordProx  [][]*tcpproxy.Proxy // [node][member]
	regProx    []*tcpproxy.Proxy
	members    []*embedded.Server
	memberCfg  []embedded.Config
	cleanupDir string
	kube       kubeRun

	mu       sync.Mutex
	events   []history.Event
	reads    []history.Read
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
	start, err := r.start(ctx)
	if err != nil {
		return nil, err
	}
	finish := r.strike(ctx, start)
	r.stopNodes()
	r.readers.Wait()
	h := r.history(finish)
	if o.Progress != nil {
		fmt.Fprint(o.Progress, "\r\033[K")
	}
	return h, ctx.Err()
}

// start starts the coordinator, a proxy per node and the nodes, and
// returns when the run began.
func (r *runner) start(ctx context.Context) (time.Time, error) {
	targets, err := r.startCoordinator(ctx)
	if err != nil {
		return time.Time{}, err
	}
	if err := r.startProxies(targets); err != nil {
		return time.Time{}, err
	}
	r.gens = make([]int, r.o.Nodes)
	r.procs = make([]*nodeProc, r.o.Nodes)
	r.origin = Mono()
	start := time.Now()
	for i := range r.o.Nodes {
		if err := r.startNode(i); err != nil {
			r.stopNodes()
			return time.Time{}, err
		}
	}
	return start, nil
}

// strike applies the fault schedule from start, reading the nodes'
// events, until the run's duration is over or ctx is cancelled, and
// returns when it ended on the run's clock (Mono).
func (r *runner) strike(ctx context.Context, start time.Time) int64 {
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(1)
	go func() { defer bg.Done(); r.readLoop(stop) }()
	if r.o.Progress != nil {
		bg.Add(1)
		go func() { defer bg.Done(); r.progressLoop(stop, start) }()
	}
	for _, f := range r.o.schedule() {
		if !sleepCtx(ctx, time.Until(start.Add(f.At))) {
			break
		}
		r.apply(ctx, f)
	}
	sleepCtx(ctx, time.Until(start.Add(r.o.Duration)))
	finish := Mono()
	close(stop)
	bg.Wait()
	return finish
}

// history is what the run recorded, up to finish.
func (r *runner) history(finish int64) *History {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &History{Options: r.o, Faults: r.faults, History: history.History{
		Origin: r.origin, Finish: finish,
		Events: r.events, Decisions: r.reg.Decisions(), Reads: r.reads,
		Kills: r.kills, Pauses: r.pauses, NodeErrors: r.nodeErrs,
	}}
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
		rd := history.Read{Call: Mono()}
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
	if r.kube.server != nil {
		r.kube.server.Kill()
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
