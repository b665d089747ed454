package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/tenure-dev/tenure/internal/display"

	"github.com/tenure-dev/tenure"
)

// faults are the faults injected on one holder's link to the coordinator.
type faults struct {
	partitioned bool
	blocked     bool
	drop        bool
	request     time.Duration // delay before a request is applied
	reply       time.Duration // delay before its reply arrives
}

// Partition cuts holder off from the coordinator: its calls fail at once
// with an error wrapping ErrPartitioned (naming the holder) until Heal. A
// call in flight when the partition begins fails when it next crosses the
// link; if its request had already been applied, its outcome is unknown to
// the caller, as over a real network.
func (c *Coordinator) Partition(holder string) {
	c.setFaults(holder, func(f *faults) { f.partitioned = true })
}

// Block makes holder's requests vanish: its calls hang until their context
// ends and then return an error wrapping the context's error, without
// having been applied. Calls blocked when Heal is called stay lost; later
// calls go through.
func (c *Coordinator) Block(holder string) {
	c.setFaults(holder, func(f *faults) { f.blocked = true })
}

// SetLatency delays holder's calls: each request is applied request after it
// is made, and its reply arrives reply after that. A call whose context ends
// during the request delay was not applied; during the reply delay, it was
// (its caller cannot tell which). It panics if a delay is negative.
func (c *Coordinator) SetLatency(holder string, request, reply time.Duration) {
	if request < 0 || reply < 0 {
		panic(fmt.Sprintf("memory: latency for %q must not be negative (request %s, reply %s)", holder, request, reply))
	}
	c.setFaults(holder, func(f *faults) { f.request, f.reply = request, reply })
}

// DropReplies, when drop is true, makes the coordinator apply holder's
// requests but lose their replies: calls hang until their context ends and
// then return an error wrapping the context's error, though they took
// effect. A caller that must know the outcome has to ask again.
func (c *Coordinator) DropReplies(holder string, drop bool) {
	c.setFaults(holder, func(f *faults) { f.drop = drop })
}

// Heal removes every fault on holder's link. Calls already blocked or
// awaiting a dropped reply stay lost.
func (c *Coordinator) Heal(holder string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.faults, holder)
}

// HealAll removes every fault of every holder.
func (c *Coordinator) HealAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.faults)
}

func (c *Coordinator) setFaults(holder string, set func(*faults)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.faults[holder]
	set(&f)
	c.faults[holder] = f
}

// faultsLocked combines the faults of holders: the call crosses every one
// of their links. It returns the first partitioned holder, if any.
//
// A fault set on a name applies to every identity with that display name
// ("a" covers "a#1f2e3d4c", see tenure.Identity), so tests and demos can
// name nodes without knowing their instance ids; a fault set on a whole
// identity applies to that identity alone.
func (c *Coordinator) faultsLocked(holders []string) (f faults, partitioned string) {
	for _, h := range holders {
		links := []string{h}
		if name, inst := display.SplitIdentity(h); inst != "" {
			links = append(links, name)
		}
		for _, l := range links {
			hf := c.faults[l]
			if hf.partitioned && !f.partitioned {
				partitioned = h
			}
			f.partitioned = f.partitioned || hf.partitioned
			f.blocked = f.blocked || hf.blocked
			f.drop = f.drop || hf.drop
			f.request = max(f.request, hf.request)
			f.reply = max(f.reply, hf.reply)
		}
	}
	return f, partitioned
}

// call runs apply under the lock as a request from holders, subject to their
// faults, the context, Restart and Close. It returns apply's error, or an
// error (not prefixed) saying why the call failed.
func (c *Coordinator) call(ctx context.Context, holders []string, apply func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return tenure.ErrClosed
	}
	f, ph := c.faultsLocked(holders)
	gen := c.gen
	c.mu.Unlock()

	// The request crosses the link.
	if f.partitioned {
		return partitionedError(ph)
	}
	if f.blocked {
		return c.hang(ctx, gen, "request lost")
	}
	if err := c.delay(ctx, gen, f.request); err != nil {
		return fmt.Errorf("request not applied: %w", err)
	}

	// The coordinator applies it, unless the link failed meanwhile.
	c.mu.Lock()
	if err := c.sameGenLocked(gen); err != nil {
		c.mu.Unlock()
		return fmt.Errorf("request not applied: %w", err)
	}
	f, ph = c.faultsLocked(holders)
	if f.partitioned {
		c.mu.Unlock()
		return partitionedError(ph)
	}
	if f.blocked {
		c.mu.Unlock()
		return c.hang(ctx, gen, "request lost")
	}
	err := apply()
	c.mu.Unlock()

	// The reply crosses the link back.
	if f.drop {
		return c.hang(ctx, gen, "reply lost")
	}
	if rerr := c.delay(ctx, gen, f.reply); rerr != nil {
		return fmt.Errorf("applied, reply lost: %w", rerr)
	}
	if f.reply > 0 {
		c.mu.Lock()
		_, ph := c.faultsLocked(holders)
		c.mu.Unlock()
		if ph != "" {
			return fmt.Errorf("applied, reply lost: %w", partitionedError(ph))
		}
	}
	return err
}

func partitionedError(holder string) error {
	return fmt.Errorf("holder %q: %w", holder, ErrPartitioned)
}

// sameGenLocked reports whether the coordinator is still the one the call
// started with: not closed, not restarted.
func (c *Coordinator) sameGenLocked(gen chan struct{}) error {
	if c.closed {
		return tenure.ErrClosed
	}
	if c.gen != gen {
		return ErrRestarted
	}
	return nil
}

// delay waits d, or until the context ends, the coordinator restarts (gen
// closes) or closes.
func (c *Coordinator) delay(ctx context.Context, gen chan struct{}, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-gen:
		return ErrRestarted
	case <-c.done:
		return tenure.ErrClosed
	}
}

// hang waits for the context to end (or the coordinator to restart or
// close) and returns why, as a call whose request or reply was lost does.
func (c *Coordinator) hang(ctx context.Context, gen chan struct{}, what string) error {
	select {
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", what, ctx.Err())
	case <-gen:
		return fmt.Errorf("%s: %w", what, ErrRestarted)
	case <-c.done:
		return fmt.Errorf("%s: %w", what, tenure.ErrClosed)
	}
}
