package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tenure-dev/tenure/internal/history"
)

// nodeClock is a node process's own clock as the clock faults set it: the
// rate at which it runs against real time, and how far its wall clock is
// from the true time. The runner sets it through the node's control input
// (readControls); only the node's coordinator wrapper (clocked) reads it.
// Nothing else in the process sees it: the Elector keeps reading the real
// clocks, and clocked moves each grant's Sent as far as a clock running at
// the rate would move the local deadline.
type nodeClock struct {
	mu sync.Mutex
	c  clockControl
}

// clockControl is one setting of a node's clock, sent by the runner as a
// JSON line on the node's standard input.
type clockControl struct {
	// On says that a clock fault is in force (the slow-clock plant acts
	// only then).
	On bool `json:"on,omitempty"`
	// Rate is the clock's rate against real time; 0 means 1.
	Rate float64 `json:"rate,omitempty"`
	// Wall is how far the node's wall clock is from the true time
	// (negative: behind).
	Wall time.Duration `json:"wall,omitempty"`
}

// rate returns the clock's rate against real time.
func (c clockControl) rate() float64 {
	if c.Rate == 0 {
		return 1
	}
	return c.Rate
}

// get returns the clock's setting.
func (n *nodeClock) get() clockControl {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.c
}

// set changes the clock's setting.
func (n *nodeClock) set(c clockControl) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.c = c
}

// wallNow reads the node's wall clock: the machine's, without its
// monotonic reading, moved by the clock's wall offset.
func (n *nodeClock) wallNow() time.Time {
	return time.Now().Round(0).Add(n.get().Wall)
}

// readControls applies every clock setting read from in to clock, and
// reports each as a clock event, until in ends or fails.
func readControls(in io.Reader, clock *nodeClock, out *eventWriter) {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var c clockControl
		if json.Unmarshal(sc.Bytes(), &c) != nil {
			out.emit(history.Event{Kind: history.KindClock, Err: fmt.Sprintf("bad clock control %q", sc.Text())})
			continue
		}
		clock.set(c)
		out.emit(history.Event{Kind: history.KindClock, Rate: c.rate(), Wall: c.Wall})
	}
}

// controlInput returns a reader of f (the node's standard input) whose
// Close ends a Read in progress: a duplicate of its descriptor in
// non-blocking mode, so that Go's poller serves it. The node's controls
// reader ends when the node does.
func controlInput(f *os.File) (*os.File, error) {
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		return nil, fmt.Errorf("chaos: control input: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("chaos: control input: %w", err)
	}
	return os.NewFile(uintptr(fd), "control"), nil
}
