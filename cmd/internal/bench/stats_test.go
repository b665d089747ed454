package bench

import (
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := Summarize(ds)
	want := Summary{N: 100, P50: 50, P99: 99, Max: 100, Mean: 50.5}
	if got != want {
		t.Errorf("Summarize(1..100ms) = %+v; want %+v", got, want)
	}
	if ds[0] != 100*time.Millisecond {
		t.Errorf("Summarize sorted its argument: ds[0] = %s", ds[0])
	}
	if got := Summarize(nil); got != (Summary{}) {
		t.Errorf("Summarize(nil) = %+v; want zero", got)
	}
	if got := Summarize([]time.Duration{3 * time.Millisecond}); got.P50 != 3 || got.P99 != 3 || got.Max != 3 {
		t.Errorf("Summarize(3ms) = %+v; want every quantile 3", got)
	}
}

func TestRatio(t *testing.T) {
	tests := []struct{ a, b, want float64 }{
		{1, 2, 0.5}, {2, 3, 0.67}, {5, 0, 0},
	}
	for _, tc := range tests {
		if got := ratio(tc.a, tc.b); got != tc.want {
			t.Errorf("ratio(%v, %v) = %v; want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
