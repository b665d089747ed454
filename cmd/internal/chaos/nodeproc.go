package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/tenure-dev/tenure/internal/history"
)

// nodeProc is one incarnation of a node slot: a node process.
type nodeProc struct {
	slot   int
	holder string
	cmd    *exec.Cmd
	ctl    io.Writer // the node's standard input: its clock's settings
	done   chan struct{}
	stderr *tailBuffer
	killed bool
}

// setClock sets the clock of node np to c, and returns a note when the
// node could not be told (it has exited).
func (np *nodeProc) setClock(c clockControl) string {
	b, _ := json.Marshal(c)
	if _, err := np.ctl.Write(append(b, '\n')); err != nil {
		return fmt.Sprintf("clock of %s not set: %v", np.holder, err)
	}
	return ""
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
	switch {
	case r.kube.kubeconfig != "":
		spec.Kubeconfig, spec.Namespace, spec.KubeProxy = r.kube.kubeconfig, r.kube.namespace, r.coordProx[i][0].Addr()
	case r.o.Postgres != "":
		spec.Postgres = proxiedDSN(r.o.Postgres, r.coordProx[i][0].Addr())
	default:
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
	ctl, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	tail := &tailBuffer{max: 4 << 10}
	cmd.Stderr = tail
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("chaos: start node %s: %w", holder, err)
	}
	np := &nodeProc{slot: i, holder: holder, cmd: cmd, ctl: ctl, done: make(chan struct{}), stderr: tail}
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
		var ev history.Event
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
