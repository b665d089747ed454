package outage_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/outage"
)

// TestOutageLog: an outage of 60 s with a failure every second writes two
// warnings in its first 30 s and one more at 60 s (not 60), every failure
// at debug level, and one info line when it ends; a second outage starts
// over with a warning.
func TestOutageLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo,
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}))
		o := &outage.Log{Msg: "acquire failed"}
		down := errors.New("connection refused")
		for range 61 {
			o.Failed(log, down, "key", "jobs")
			time.Sleep(time.Second)
		}
		o.Succeeded(log, "key", "jobs")
		o.Succeeded(log, "key", "jobs") // no outage: nothing
		o.Failed(log, down, "key", "jobs")

		want := []string{
			`level=WARN msg="acquire failed" key=jobs err="connection refused"`,
			`level=WARN msg="acquire failed (still failing)" key=jobs failures=31 for=30s err="connection refused"`,
			`level=WARN msg="acquire failed (still failing)" key=jobs failures=61 for=1m0s err="connection refused"`,
			`level=INFO msg="acquire failed: works again" key=jobs failures=61 for=1m1s`,
			`level=WARN msg="acquire failed" key=jobs err="connection refused"`,
		}
		got := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if o.Failures() != 1 {
			t.Errorf("Failures() = %d after a new outage's first failure; want 1", o.Failures())
		}
	})
}
