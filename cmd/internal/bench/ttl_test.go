package bench

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTTLModel checks the model on a hand-built environment: fast round
// trips, no stalls, and an injected 2s pause ten times an hour. Only TTLs
// whose slack (safe lease − renew interval) outlasts 2s avoid demotions.
func TestTTLModel(t *testing.T) {
	o := TTLOptions{Target: Target{Endpoints: []string{"x"}}, Pause: 2 * time.Second, PauseRate: 10}
	if err := o.defaults(); err != nil {
		t.Fatal(err)
	}
	env := environment{rtts: []time.Duration{time.Millisecond, 2 * time.Millisecond}, span: time.Minute}
	rng := rand.New(rand.NewPCG(1, 2))
	var rows []Row
	for _, ttl := range o.TTLs {
		rows = append(rows, o.model(env, ttl, rng))
	}
	want := map[time.Duration]float64{time.Second: 10, 2 * time.Second: 10, 5 * time.Second: 0, 10 * time.Second: 0}
	for i, ttl := range o.TTLs {
		x := rows[i].Extra
		if got := x["demotions_per_hour"]; got != want[ttl] {
			t.Errorf("TTL %s: demotions_per_hour = %v; want %v (slack %vms)", ttl, got, want[ttl], x["slack_ms"])
		}
		// The lease's remainder is at least TTL − renew interval.
		if lo := ms(ttl) - x["renew_every_ms"]; x["failover_p50_ms"] < lo || x["failover_p99_ms"] > ms(ttl)+600 {
			t.Errorf("TTL %s: failover p50 %vms, p99 %vms; want within [%v, %v]", ttl, x["failover_p50_ms"], x["failover_p99_ms"], lo, ms(ttl)+600)
		}
	}
	if rec := o.recommend(rows); !strings.HasPrefix(rec, "--ttl 5s") {
		t.Errorf("recommendation = %q; want --ttl 5s", rec)
	}
	// A 400ms stall seen once: no demotion at TTL 1s (slack 493ms), but
	// too little headroom over it; TTL 2s has twice that.
	stalled := environment{rtts: env.rtts, stalls: []time.Duration{400 * time.Millisecond}, span: time.Hour}
	o.Pause = 0
	for i, ttl := range o.TTLs {
		rows[i] = o.model(stalled, ttl, rng)
	}
	if got := rows[0].Extra["demotions_per_hour"]; got != 0 {
		t.Errorf("TTL 1s with a 400ms stall: demotions_per_hour = %v; want 0", got)
	}
	if rec := o.recommend(rows); !strings.HasPrefix(rec, "--ttl 2s") {
		t.Errorf("with a 400ms stall, recommendation = %q; want --ttl 2s", rec)
	}
	o.Pause = 20 * time.Second
	for i, ttl := range o.TTLs {
		rows[i] = o.model(env, ttl, rng)
	}
	if rec := o.recommend(rows); !strings.HasPrefix(rec, "none of") {
		t.Errorf("with 20s pauses, recommendation = %q; want none", rec)
	}
}

// TestTTLModelGranted: a row is modelled at the TTL the coordinator
// grants, not the one asked for.
func TestTTLModelGranted(t *testing.T) {
	o := TTLOptions{Target: Target{Endpoints: []string{"x"}}, TTLs: []time.Duration{time.Second}}
	if err := o.defaults(); err != nil {
		t.Fatal(err)
	}
	env := environment{rtts: []time.Duration{time.Millisecond}, span: time.Minute,
		granted: map[time.Duration]time.Duration{time.Second: 2 * time.Second}}
	x := o.model(env, time.Second, rand.New(rand.NewPCG(1, 2))).Extra
	if x["granted_ttl_ms"] != 2000 {
		t.Errorf("granted_ttl_ms = %v; want 2000", x["granted_ttl_ms"])
	}
	if lo := 2000 - x["renew_every_ms"]; x["failover_p50_ms"] < lo {
		t.Errorf("failover p50 %vms; want at least %vms, the 2s lease's remainder", x["failover_p50_ms"], lo)
	}
}

func TestTTLEtcd(t *testing.T) {
	// etcd grants whole seconds: 1.5s is granted as 2s.
	r, err := TTL(t.Context(), TTLOptions{Target: etcdTarget(t), TTLs: []time.Duration{1500 * time.Millisecond, 3 * time.Second}, Measure: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 2 || r.Recommendation == "" {
		t.Fatalf("report = %+v; want two rows and a recommendation", r)
	}
	if g := r.Rows[0].Extra["granted_ttl_ms"]; g != 2000 {
		t.Errorf("ttl=1.5s row: granted_ttl_ms = %v; want 2000 (etcd's whole seconds)", g)
	}
	if g := r.Rows[1].Extra["granted_ttl_ms"]; g != 3000 {
		t.Errorf("ttl=3s row: granted_ttl_ms = %v; want 3000", g)
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "asked for 1.5s, the coordinator granted 2s") }) {
		t.Errorf("notes %q; want one saying 1.5s was granted as 2s", r.Notes)
	}
	if !strings.Contains(r.Notes[0], "simulated") {
		t.Errorf("first note = %q; want it to say the figures are simulated", r.Notes[0])
	}
	checkReport(t, r, "", 0)
}
