package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/internal/history"
	"github.com/tenure-dev/tenure/internal/plant"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"
)

// NodeSpec tells a node process what to do. The runner passes it as JSON.
type NodeSpec struct {
	// Holder is the node's identity.
	Holder string `json:"holder"`
	// Key is the key the nodes compete for.
	Key string `json:"key"`
	// Endpoints are etcd client URLs (through the node's proxies).
	Endpoints []string `json:"endpoints,omitempty"`
	// Postgres is a PostgreSQL DSN (through the node's proxy), instead of
	// Endpoints.
	Postgres string `json:"postgres,omitempty"`
	// Kubeconfig is a kubeconfig file whose current context's cluster and
	// user reach the Kubernetes API server, through the node's proxy at
	// KubeProxy, instead of Endpoints; the Leases are in Namespace.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	KubeProxy  string `json:"kube_proxy,omitempty"`
	// Register is the base URL of the register service (through the node's
	// proxy).
	Register string `json:"register"`
	// TTL, Margin and MaxDrift configure the elector.
	TTL      time.Duration `json:"ttl"`
	Margin   time.Duration `json:"margin"`
	MaxDrift float64       `json:"max_drift"`
	// WriteEvery is the pause between two writes while leading.
	WriteEvery time.Duration `json:"write_every"`
	// Plant is the planted bug, "" for none.
	Plant string `json:"plant,omitempty"`
	// Partitions, when positive, makes the node one member of a partition
	// group of that many partitions under Key (package partition) instead
	// of an Elector of Key: it writes to each partition's resource of the
	// register while it owns the partition.
	Partitions int `json:"partitions,omitempty"`
}

// electorConfig returns the elector configuration the spec describes.
func (s NodeSpec) electorConfig() tenure.Config {
	cfg := tenure.DefaultConfig()
	cfg.Key = s.Key
	cfg.Holder = s.Holder
	cfg.TTL = s.TTL
	cfg.Margin = s.Margin
	cfg.MaxDrift = s.MaxDrift
	return cfg
}

// ParseNodeSpec decodes a NodeSpec from JSON.
func ParseNodeSpec(s string) (NodeSpec, error) {
	var spec NodeSpec
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return spec, fmt.Errorf("chaos: node spec: %w", err)
	}
	if err := checkPlant(spec.Plant); err != nil {
		return spec, err
	}
	if len(spec.Endpoints) == 0 && spec.Postgres == "" && spec.Kubeconfig == "" {
		return spec, errors.New("chaos: node spec names no coordinator")
	}
	if spec.Kubeconfig != "" && (spec.Namespace == "" || spec.KubeProxy == "") {
		return spec, errors.New("chaos: node spec: kubeconfig needs namespace and kube_proxy")
	}
	if spec.Register == "" {
		return spec, errors.New("chaos: node spec names no register")
	}
	if spec.WriteEvery <= 0 {
		return spec, fmt.Errorf("chaos: node spec: write_every (%s) must be positive", spec.WriteEvery)
	}
	if spec.Partitions > 0 {
		return spec, spec.groupConfig().Validate()
	}
	if spec.Partitions < 0 {
		return spec, fmt.Errorf("chaos: node spec: partitions (%d) must not be negative", spec.Partitions)
	}
	return spec, spec.electorConfig().Validate()
}

// RunNode is the body of a node process: it connects to the coordinator,
// campaigns (or joins the partition group), writes to the register while it
// leads, and reports every event as a JSON line on out, until ctx ends. It
// runs its elector on the node's own clock, which the runner sets with
// JSON lines on ctl (the process's standard input; nil or anything but a
// pipe: a true clock throughout).
func RunNode(ctx context.Context, spec NodeSpec, ctl *os.File, out io.Writer) error {
	ew := newEventWriter(out, spec.Holder)
	clock := &nodeClock{}
	stop, err := followControls(ctl, clock, ew)
	if err != nil {
		return err
	}
	defer stop()
	ew.emit(history.Event{Kind: history.KindStart})
	base, err := dial(ctx, spec, ew)
	if err != nil || base == nil {
		return err // nil: ctx ended
	}
	defer base.Close()
	w := &writer{spec: spec, out: ew, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	defer w.client.CloseIdleConnections()
	if spec.Partitions > 0 {
		err = runMember(ctx, spec, base, clock, w)
	} else {
		err = runElector(ctx, spec, base, clock, w)
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// followControls applies the clock settings read from ctl to clock until
// the returned stop is called, which waits for the reader to end. A ctl
// that is nil or not a pipe is not read.
func followControls(ctl *os.File, clock *nodeClock, ew *eventWriter) (stop func(), err error) {
	if ctl == nil {
		return func() {}, nil
	}
	if st, err := ctl.Stat(); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return func() {}, nil
	}
	in, err := controlInput(ctl)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		readControls(in, clock, ew)
	}()
	return func() { in.Close(); <-done }, nil
}

// dial connects to the spec's coordinator, retrying until it succeeds; it
// returns nil when ctx ends first. A coordinator on Kubernetes makes no
// request until it is used: only a configuration it cannot use fails it.
func dial(ctx context.Context, spec NodeSpec, ew *eventWriter) (partition.Coordinator, error) {
	if spec.Kubeconfig != "" {
		return dialKube(spec)
	}
	for ctx.Err() == nil {
		var base partition.Coordinator
		var err error
		dctx, cancel := context.WithTimeout(ctx, 2*spec.TTL)
		if spec.Postgres != "" {
			base, err = postgres.Dial(dctx, spec.Postgres)
		} else {
			base, err = etcd.Dial(dctx, etcd.Config{Endpoints: spec.Endpoints, DialTimeout: 2 * spec.TTL})
		}
		cancel()
		if err == nil {
			return base, nil
		}
		ew.emit(history.Event{Kind: "dial", Err: err.Error()})
	}
	return nil, nil
}

// runElector runs one Elector of the spec's key on base, on the node's
// clock, until ctx ends. From the Elector down: the node's clock
// (clocked), the planted bug, the recorder, the coordinator.
func runElector(ctx context.Context, spec NodeSpec, base tenure.Coordinator, clock *nodeClock, w *writer) error {
	cfg := spec.electorConfig()
	c := plant.Wrap(recorder{plant.Passthrough{Coordinator: base}, w.out}, spec.Plant, cfg)
	cfg.OnTransition = w.transition
	e, err := tenure.NewElector(clocked{plant.Passthrough{Coordinator: c}, newNodeTime(clock, cfg, spec.Plant)}, cfg)
	if err != nil {
		return err
	}
	return e.Run(ctx, w.lead)
}

// transition reports an elector's or a partition's transition.
func (w *writer) transition(tr tenure.Transition) {
	ev := history.Event{Kind: history.KindTransition, At: monoOf(tr.At), Token: tr.Token, Result: tr.Kind.String()}
	if w.spec.Partitions > 0 {
		ev.Partition = strings.TrimPrefix(tr.Key, w.spec.Key+"/")
	}
	if tr.Kind == tenure.Elected {
		ev.Kind = history.KindElected
	}
	if tr.Err != nil {
		ev.Err = tr.Err.Error()
	}
	w.out.emit(ev)
}

// writer writes to the register while its node leads.
type writer struct {
	spec   NodeSpec
	out    *eventWriter
	client *http.Client
	seq    atomic.Int64
}

// lead is the elector's leader function: write every WriteEvery until the
// term ends.
func (w *writer) lead(ctx context.Context, t *tenure.Term) error {
	context.AfterFunc(t.Context(), func() {
		w.out.emit(history.Event{Kind: history.KindEnd, Token: t.Token(), Deadline: monoOf(t.Deadline())})
	})
	tick := time.NewTicker(w.spec.WriteEvery)
	defer tick.Stop()
	for {
		if t.Check() != nil {
			return nil
		}
		if stale := w.write(ctx, t, ""); stale {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// write sends one write to the register's resource of partition part ("":
// the single one) and reports it; it returns true when the register said
// the token is stale.
func (w *writer) write(ctx context.Context, t *tenure.Term, part string) (stale bool) {
	value := fmt.Sprintf("%s#%d", w.spec.Holder, w.seq.Add(1))
	token := t.Token()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.spec.TTL)
	defer cancel()

	path := "/fenced"
	var rt http.RoundTripper = &fence.Transport{Base: w.client.Transport, Source: t}
	if w.spec.Plant == plant.NoToken {
		path = "/unfenced"
		rt = w.client.Transport
	}
	if part != "" {
		path = "/p/" + part + path
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodPut, w.spec.Register+path, strings.NewReader(value))
	if err != nil {
		panic(err) // the URL was checked when the spec was parsed
	}
	req.Header.Set(headerClaimedToken, strconv.FormatUint(token, 10))
	req.Header.Set(headerValue, value)
	sent := Mono()
	w.out.emit(history.Event{Kind: history.KindWriteStart, At: sent, Token: token, Value: value, Deadline: monoOf(t.Deadline()), Partition: part})
	resp, err := rt.RoundTrip(req)
	ev := history.Event{Kind: history.KindWrite, Sent: sent, Token: token, Value: value, Partition: part}
	switch {
	case errors.Is(err, tenure.ErrNotLeader):
		// fence.Transport sent nothing: the term had ended.
		ev.Result, ev.Err = history.ResultRefused, err.Error()
	case err != nil:
		ev.Result, ev.Err = history.ResultUnknown, err.Error()
	default:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK, http.StatusNoContent:
			ev.Result = history.ResultAccepted
		case http.StatusConflict:
			ev.Result, stale = history.ResultStale, true
		default:
			ev.Result, ev.Err = history.ResultRejected, resp.Status
		}
	}
	w.out.emit(ev)
	return stale
}
