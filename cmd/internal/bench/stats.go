package bench

import (
	"math"
	"slices"
	"time"
)

// Summary is the distribution of a set of durations. Its JSON has the
// durations in milliseconds.
type Summary struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

// Summarize returns the distribution of ds (which it does not modify); the
// zero Summary when ds is empty.
func Summarize(ds []time.Duration) Summary {
	if len(ds) == 0 {
		return Summary{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Summary{
		N:    len(s),
		P50:  ms(quantile(s, 0.50)),
		P99:  ms(quantile(s, 0.99)),
		Max:  ms(s[len(s)-1]),
		Mean: ms(sum / time.Duration(len(s))),
	}
}

// quantile is the nearest-rank q-quantile of sorted s: the smallest value
// with at least q of the values at or below it.
func quantile(s []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// ms is d in milliseconds, rounded to microseconds.
func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

// ratio is a/b rounded to two decimals, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*100) / 100
}
