package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestNiceStep(t *testing.T) {
	for _, tc := range []struct {
		max  float64
		step float64
		n    int
	}{
		{2205, 500, 5}, // not 0, 552, 1103, …
		{9.3, 2, 5},
		{100, 20, 5},
		{0.37, 0.1, 4},
		{1, 0.2, 5},
		{0, 1, 1},
	} {
		step, n := niceStep(tc.max)
		if step != tc.step || n != tc.n {
			t.Errorf("niceStep(%v) = %v, %d; want %v, %d", tc.max, step, n, tc.step, tc.n)
		}
		if tc.max > 0 && (step*float64(n) < tc.max || step*float64(n-1) >= tc.max) {
			t.Errorf("niceStep(%v): %d steps of %v do not cover it tightly", tc.max, n, step)
		}
	}
}

// The page says in words who won each case, and its x axis has round ticks.
func TestHTMLSaysWhoWon(t *testing.T) {
	r := &Report{Benchmark: "handover", Backend: "etcd", Settings: map[string]any{}}
	r.addLatency("tenure", "", []time.Duration{3 * time.Millisecond, 4 * time.Millisecond, 2205 * time.Millisecond}, nil, 0)
	r.addLatency("etcd-election", "", []time.Duration{2 * time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}, nil, 0)
	r.Rows = append(r.Rows, Row{Impl: "tenure", Case: "clients=10", OpsPerSec: 900}, Row{Impl: "etcd-mutex", Case: "clients=10", OpsPerSec: 1000})
	r.compare("tenure", "etcd-election")
	r.compare("tenure", "etcd-mutex")
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`<p class="verdict"><b>etcd-election won: 2.00× faster than tenure (p50: tenure 4.00 ms, etcd-election 2.00 ms)</b></p>`,
		`<p class="verdict"><b>etcd-mutex won (clients=10): 1.11× faster than tenure (ops/s: tenure 900, etcd-mutex 1000)</b></p>`,
		`>500</text>`, `>2500</text>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(page, ">552</text>") {
		t.Error("page has the tick 552; want round ticks")
	}
}
