package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure"
)

// TTLOptions configure TTL.
type TTLOptions struct {
	Target
	// TTLs are the leases compared. Default 1s, 2s, 5s, 10s.
	TTLs []time.Duration
	// Margin is the holder's safety margin, at least timing.MinMargin; 0
	// means min(1s, TTL/4), but at least timing.MinMargin, for each TTL.
	Margin time.Duration
	// MaxDrift is the clock-rate bound of the local deadline. Default 0.01.
	MaxDrift float64
	// Measure is how long round trips and stalls are measured. Default 8s.
	Measure time.Duration
	// Latency is added to every measured round trip: the network of the
	// user's environment, if this machine's is better.
	Latency time.Duration
	// Pause and PauseRate inject process pauses (GC, VM freezes) of length
	// Pause, PauseRate times per hour, besides the stalls measured.
	Pause     time.Duration
	PauseRate float64
	// Threshold is the wrongful-demotion rate per hour that the
	// recommended TTL stays below. Default 0.1 (one in ten hours).
	Threshold float64
	// Seed seeds the model's random draws; 0 is a fixed default, so that
	// one environment gives one answer.
	Seed uint64
}

func (o *TTLOptions) defaults() error {
	if len(o.TTLs) == 0 {
		o.TTLs = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second}
	}
	if o.MaxDrift == 0 {
		o.MaxDrift = 0.01
	}
	if o.Measure == 0 {
		o.Measure = 8 * time.Second
	}
	if o.Threshold == 0 {
		o.Threshold = 0.1
	}
	var errs []error
	if o.Margin < 0 || (o.Margin > 0 && o.Margin < timing.MinMargin) {
		errs = append(errs, fmt.Errorf("%w: --margin %s is below the least margin, %s (a host suspend of up to %s is not counted against a lease)", ErrInvalidOptions, o.Margin, timing.MinMargin, timing.MinMargin))
	}
	for _, ttl := range o.TTLs {
		if ttl <= 0 {
			errs = append(errs, fmt.Errorf("%w: --ttls %s: every TTL must be positive", ErrInvalidOptions, ttl))
			continue
		}
		m := o.margin(ttl)
		if cfg := (tenure.Config{MaxDrift: o.MaxDrift, Margin: m}); timing.SafeLease(ttl, cfg.MaxDrift, cfg.Margin) <= 0 {
			errs = append(errs, fmt.Errorf("%w: --ttls %s is too short for --margin %s", ErrInvalidOptions, ttl, m))
		}
	}
	if o.Measure < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("%w: --measure %s: want 100ms or more", ErrInvalidOptions, o.Measure))
	}
	if o.Latency < 0 || o.Pause < 0 || o.PauseRate < 0 || o.Threshold < 0 {
		errs = append(errs, fmt.Errorf("%w: --latency, --pause, --pause-rate and --threshold must not be negative", ErrInvalidOptions))
	}
	return errors.Join(append(errs, o.validate())...)
}

func (o *TTLOptions) margin(ttl time.Duration) time.Duration {
	if o.Margin > 0 {
		return o.Margin
	}
	return max(timing.MinMargin, min(time.Second, ttl/4))
}

// environment is what was measured: renewal round trips and the process's
// stalls, over a span of time.
type environment struct {
	rtts   []time.Duration
	stalls []time.Duration
	span   time.Duration
	// granted maps each TTL asked for to the TTL the coordinator granted:
	// etcd rounds up to whole seconds and to its minimum lease TTL (1.5×
	// the election timeout: 2s on a cluster with the default 1s).
	granted map[time.Duration]time.Duration
}

// TTL shows the trade-off of the lease's length: for each TTL, the crash
// failover time and the rate of wrongful demotions (a healthy leader
// losing its term because a renewal came back too late) per hour, from a
// model fed with renewal round trips and process stalls measured on the
// target for Measure, plus the latency and pauses given. It ends with the
// shortest TTL whose rate is at most Threshold. The figures are a model,
// not a long real run; the report says so.
func TTL(ctx context.Context, o TTLOptions) (*Report, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	began := time.Now()
	o.progress("ttl: measuring renewal round trips and stalls for %s", o.Measure)
	env, err := measureEnv(ctx, o.Target, o.Measure, o.TTLs)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x7e1))
	r := &Report{Benchmark: "ttl", Backend: o.Backend(), Settings: map[string]any{
		"measure_ms": ms(o.Measure), "latency_ms": ms(o.Latency), "pause_ms": ms(o.Pause),
		"pause_rate_per_hour": o.PauseRate, "threshold_per_hour": o.Threshold,
	}, Failures: []string{}}
	for _, ttl := range o.TTLs {
		r.Rows = append(r.Rows, o.model(env, ttl, rng))
	}
	r.Recommendation = o.recommend(r.Rows)
	rs := Summarize(env.rtts)
	ss := Summarize(env.stalls)
	r.Notes = []string{
		fmt.Sprintf("simulated: a model fed with %d renewal round trips (p50 %.2fms, p99 %.2fms, max %.2fms) and %d stalls of this process over 1ms (max %.2fms) measured in %s on this machine; no TTL was waited out in real time",
			rs.N, rs.P50, rs.P99, rs.Max, ss.N, ss.Max, env.span.Round(time.Millisecond)),
		"wrongful demotion: a renewal's reply (round trip + latency + a stall or pause) arriving after the local deadline, TTL·(1−drift) − margin after the previous renewal was sent; renewals as the Elector and partition members schedule them: min(TTL/3, safe lease/2) after a reply",
		fmt.Sprintf("demotions_per_hour resolves rates down to about %.0f per hour from stalls (one stall in the measured span); rates below come from the round trips' tail and the injected pauses only", 3600/env.span.Seconds()),
		"failover: a crash at a random moment of the renewal cycle; the lease's remainder, then the coordinator's expiry (etcd: a revocation pass every 500ms), a watch event and one acquisition round trip",
	}
	for _, asked := range o.TTLs {
		if g := env.granted[asked]; g != asked {
			r.Notes = append(r.Notes, fmt.Sprintf("asked for %s, the coordinator granted %s (etcd: whole seconds, and at least 1.5x its election timeout); the ttl=%s row is modelled at %s", asked, g, asked, g))
		}
	}
	r.Elapsed = ms(time.Since(began))
	return r, nil
}

// measureEnv asks the coordinator which TTL it grants for each of ttls,
// then renews one grant every 20ms and, meanwhile, times a 5ms ticker's
// lateness, for d.
func measureEnv(ctx context.Context, t Target, d time.Duration, ttls []time.Duration) (environment, error) {
	c, err := t.coordinator(ctx)
	if err != nil {
		return environment{}, err
	}
	defer c.Close()
	env := environment{span: d}
	if env.granted, err = grantedTTLs(ctx, c, ttls); err != nil {
		return environment{}, err
	}
	g, err := c.Acquire(ctx, "bench/"+runID()+"/ttl", "ttl-probe", 10*time.Second)
	if err != nil {
		return environment{}, err
	}
	defer c.Release(context.WithoutCancel(ctx), g)
	mctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { env.stalls = measureStalls(mctx, 5*time.Millisecond) })
	for mctx.Err() == nil {
		start := time.Now()
		if g, err = c.Renew(mctx, g); err != nil {
			break
		}
		env.rtts = append(env.rtts, time.Since(start))
		_ = sleep(mctx, 20*time.Millisecond)
	}
	wg.Wait()
	if ctx.Err() != nil {
		return environment{}, ctx.Err()
	}
	if len(env.rtts) == 0 {
		return environment{}, fmt.Errorf("bench: no renewal round trip measured: %w", err)
	}
	return env, nil
}

// grantedTTLs acquires one probe key per TTL, each for its own holder (so
// that no lease is shared), and returns the TTL each grant carries.
func grantedTTLs(ctx context.Context, c tenure.Coordinator, ttls []time.Duration) (map[time.Duration]time.Duration, error) {
	out := make(map[time.Duration]time.Duration, len(ttls))
	for _, ttl := range ttls {
		probe := fmt.Sprintf("ttl-probe-%d", ttl.Milliseconds())
		g, err := c.Acquire(ctx, "bench/"+runID()+"/"+probe, probe, ttl)
		if err != nil {
			return nil, fmt.Errorf("bench: ask for a %s lease: %w", ttl, err)
		}
		// A grant reports the time left as of its reply, a little under
		// the lease granted.
		out[ttl] = max(g.TTL.Round(100*time.Millisecond), ttl)
		if err := c.Release(context.WithoutCancel(ctx), g); err != nil {
			return nil, fmt.Errorf("bench: release the %s probe: %w", ttl, err)
		}
	}
	return out, nil
}

// measureStalls returns how late a ticker of period p fired, each time it
// was more than 1ms late, until ctx ends.
func measureStalls(ctx context.Context, p time.Duration) []time.Duration {
	var out []time.Duration
	tick := time.NewTicker(p)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return out
		case now := <-tick.C:
			if late := now.Sub(last) - p; late > time.Millisecond {
				out = append(out, late)
			}
			last = now
		}
	}
}

// model returns the row of one TTL asked for, modelled with the TTL the
// coordinator grants for it.
func (o *TTLOptions) model(env environment, asked time.Duration, rng *rand.Rand) Row {
	ttl := asked
	if g, ok := env.granted[asked]; ok {
		ttl = g
	}
	cfg := tenure.Config{TTL: ttl, Margin: o.margin(ttl), MaxDrift: o.MaxDrift}
	safe := timing.SafeLease(ttl, cfg.MaxDrift, cfg.Margin)
	interval := timing.NextRenewal(timing.RenewInterval(ttl, 0), ttl, safe) // the Elector's schedule
	slack := safe - interval
	// Renewals whose round trip outlives the slack.
	late := 0
	for _, r := range env.rtts {
		if r+o.Latency > slack {
			late++
		}
	}
	perHour := float64(late) / float64(len(env.rtts)) * (float64(time.Hour) / float64(interval))
	// A stall or pause of x at a random moment of the cycle outlives the
	// deadline with probability (x − slack)/interval, clamped to [0, 1].
	hit := func(x time.Duration) float64 {
		return min(max(float64(x-slack)/float64(interval), 0), 1)
	}
	var stallHits float64
	for _, s := range env.stalls {
		stallHits += hit(s + o.Latency)
	}
	perHour += stallHits / env.span.Hours()
	perHour += o.PauseRate * hit(o.Pause)
	fo := o.failovers(env, ttl, interval, rng)
	s := Summarize(fo)
	// The worst delay measured (injected pauses are counted by their rate).
	worst := o.Latency + slices.Max(env.rtts) + slices.Max(append([]time.Duration{0}, env.stalls...))
	return Row{Impl: "tenure", Case: "ttl=" + asked.String(), Extra: map[string]float64{
		"granted_ttl_ms": ms(ttl), "margin_ms": ms(cfg.Margin), "renew_every_ms": ms(interval), "slack_ms": ms(slack),
		"failover_p50_ms": s.P50, "failover_p99_ms": s.P99, "demotions_per_hour": perHour,
		"headroom_x": math.Round(float64(slack)/float64(worst)*10) / 10,
	}}
}

// failovers draws crash failover times: the lease's remainder after a crash
// at a random moment of the renewal cycle, the coordinator's expiry pass,
// and a watch event plus an acquisition (two round trips drawn).
func (o *TTLOptions) failovers(env environment, ttl, interval time.Duration, rng *rand.Rand) []time.Duration {
	const n = 20000
	out := make([]time.Duration, n)
	draw := func() time.Duration { return env.rtts[rng.IntN(len(env.rtts))] + o.Latency }
	for i := range out {
		d := ttl - time.Duration(rng.Int64N(int64(interval)))
		if o.Postgres == "" {
			d += time.Duration(rng.Int64N(int64(500 * time.Millisecond)))
		}
		out[i] = d + draw() + draw()
	}
	return out
}

// minHeadroom is how many times the worst delay measured (round trip,
// stall or pause) a recommended TTL's renewal slack must be: a short
// measurement cannot see rare stalls, so the recommendation keeps a margin
// over the ones it saw.
const minHeadroom = 2.0

// recommend names the shortest TTL whose wrongful-demotion rate is at most
// the threshold.
func (o *TTLOptions) recommend(rows []Row) string {
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return int(o.TTLs[a] - o.TTLs[b]) })
	for _, i := range idx {
		x := rows[i].Extra
		if x["demotions_per_hour"] <= o.Threshold && x["headroom_x"] >= minHeadroom {
			return fmt.Sprintf("--ttl %s: the shortest TTL here with at most %g wrongful demotions per hour (%.3g/h) and a renewal slack %.1fx the worst delay seen; crash failover p50 %.0fms, p99 %.0fms",
				o.TTLs[i], o.Threshold, x["demotions_per_hour"], x["headroom_x"], x["failover_p50_ms"], x["failover_p99_ms"])
		}
	}
	return fmt.Sprintf("none of %v stays under %g wrongful demotions per hour with a slack %gx the worst delay seen: try longer TTLs, or find the stalls", o.TTLs, o.Threshold, minHeadroom)
}
