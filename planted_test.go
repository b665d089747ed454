package tenure_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

// Planted bugs prove the chaos checker can fail. Each wraps the memory
// coordinator so that the elector computes the deadline a buggy elector
// would: the wrapper inflates the TTL it reports by exactly the amount the
// bug would add to the local deadline.

// replyDeadline plants "deadline measured from the reply instead of the
// send": the reported TTL grows by the call's round trip, so send + TTL'
// equals reply + TTL.
type replyDeadline struct{ *memory.Coordinator }

func (c replyDeadline) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	sent := time.Now()
	g, err := c.Coordinator.Acquire(ctx, key, holder, ttl)
	g.TTL += time.Since(sent)
	return g, err
}

func (c replyDeadline) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	sent := time.Now()
	g, err := c.Coordinator.Renew(ctx, g)
	g.TTL += time.Since(sent)
	return g, err
}

// noMargin plants "no safety margin": the reported TTL is inflated so that
// TTL'·(1−MaxDrift) − Margin equals the real TTL, i.e. the elector acts
// until send + TTL, with no allowance for clock-rate drift or scheduling.
type noMargin struct {
	*memory.Coordinator
	cfg tenure.Config
}

func (c noMargin) inflate(g tenure.Grant) tenure.Grant {
	g.TTL = time.Duration(float64(g.TTL+c.cfg.Margin) / (1 - c.cfg.MaxDrift))
	return g
}

func (c noMargin) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	g, err := c.Coordinator.Acquire(ctx, key, holder, ttl)
	return c.inflate(g), err
}

func (c noMargin) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	g.TTL = ttlOf(c.cfg)
	g, err := c.Coordinator.Renew(ctx, g)
	return c.inflate(g), err
}

func ttlOf(cfg tenure.Config) time.Duration { return cfg.TTL }

func TestChaosCatchesPlantedBugs(t *testing.T) {
	const runs = 20
	bugs := []struct {
		name string
		fams []family
		rate float64
		wrap func(*memory.Coordinator, tenure.Config) tenure.Coordinator
		// least is how many of the runs must report an overlap (seen:
		// 19 or 20 of 20 for both bugs).
		least int
	}{
		{"none", []family{famLatency, famDegrade, famPartition, famBlock}, chaosDrift, nil, 0},
		{"deadline from reply", []family{famLatency, famDegrade, famPartition, famBlock}, 0,
			func(c *memory.Coordinator, _ tenure.Config) tenure.Coordinator { return replyDeadline{c} }, 18},
		{"no margin", []family{famLatency, famDegrade, famPartition, famBlock, famDrift}, chaosDrift,
			func(c *memory.Coordinator, cfg tenure.Config) tenure.Coordinator { return noMargin{c, cfg} }, 18},
	}
	for _, bug := range bugs {
		t.Run(bug.name, func(t *testing.T) {
			caught := 0
			var example string
			for seed := uint64(1); seed <= runs; seed++ {
				synctest.Test(t, func(t *testing.T) {
					o := chaosOptions{seed: seed, nodes: 3, length: 240 * time.Second, fams: bug.fams, maxRate: bug.rate, margin: -1}
					if bug.wrap != nil {
						o.wrap = func(c tenure.Coordinator, cfg tenure.Config) tenure.Coordinator {
							return bug.wrap(c.(*memory.Coordinator), cfg)
						}
					}
					res := runChaos(t, o)
					if len(res.orderBreaches) > 0 {
						t.Errorf("seed %d: the fenced register accepted a stale write:\n%s", seed, res.describe(seed))
					}
					if len(res.overlaps) > 0 {
						caught++
						if example == "" {
							example = fmt.Sprintf("seed %d: %s (%d overlaps, %s in all)", seed, res.overlaps[0], len(res.overlaps), res.overlapTotal)
						}
					}
				})
			}
			t.Logf("planted bug %q: overlap reported in %d of %d runs; e.g. %s", bug.name, caught, runs, example)
			if bug.wrap == nil && caught > 0 {
				t.Fatalf("unplanted build reported overlaps in %d of %d runs: %s", caught, runs, example)
			}
			if caught < bug.least {
				t.Fatalf("planted bug %q caught in %d of %d runs; want at least %d", bug.name, caught, runs, bug.least)
			}
		})
	}
}
