// Package outage keeps a retry loop's log readable while something it
// depends on is down: the first failure is a warning with its error, the
// failures after it are counted (logged at debug level) and summed up in
// one warning every SummaryEvery, and the first success after them is one
// info line that says how long the outage lasted.
//
// A Log belongs to one retry loop; it is not safe for concurrent use.
package outage

import (
	"log/slog"
	"time"
)

// SummaryEvery is how often a Log repeats its warning while the failures
// go on.
const SummaryEvery = 30 * time.Second

// A Log reports the failures of one retry loop.
type Log struct {
	// Msg is the warning, as for a single failure ("acquire failed").
	Msg string

	failures     int
	since, shown time.Time
}

// Failed reports a failure with err and attrs (key-value pairs, as for
// slog): the first of an outage, and one every SummaryEvery after it, as a
// warning; the others at debug level.
func (o *Log) Failed(log *slog.Logger, err error, attrs ...any) {
	now := time.Now()
	o.failures++
	switch {
	case o.failures == 1:
		o.since, o.shown = now, now
		log.Warn(o.Msg, append(attrs, "err", err)...)
	case now.Sub(o.shown) >= SummaryEvery:
		o.shown = now
		log.Warn(o.Msg+" (still failing)", append(attrs, "failures", o.failures, "for", now.Sub(o.since).Round(time.Millisecond), "err", err)...)
	default:
		log.Debug(o.Msg, append(attrs, "failures", o.failures, "err", err)...)
	}
}

// Succeeded ends an outage: after failures, it logs at info level that
// what failed works again, after how many failures and how long.
func (o *Log) Succeeded(log *slog.Logger, attrs ...any) {
	if o.failures == 0 {
		return
	}
	log.Info(o.Msg+": works again", append(attrs, "failures", o.failures, "for", time.Since(o.since).Round(time.Millisecond))...)
	o.failures = 0
}

// Failures is how many failures the outage has had so far (0 when there is
// none).
func (o *Log) Failures() int { return o.failures }
