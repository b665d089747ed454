package zapslog_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/tenure-dev/tenure/internal/zapslog"
)

func TestForwardsAtOrAboveMin(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	z := zapslog.New(l, slog.LevelWarn).With(zap.String("member", "m1"))
	z.Info("chatty", zap.Int("n", 1))
	z.Warn("slow request", zap.Duration("took", 3e9), zap.Error(errors.New("boom")))
	got := buf.String()
	if strings.Contains(got, "chatty") {
		t.Errorf("info record forwarded with min warn:\n%s", got)
	}
	for _, want := range []string{"level=WARN", `msg="slow request"`, "member=m1", "took=3s", "error=boom"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

func TestDefaults(t *testing.T) {
	// A nil slog.Logger discards; must not panic.
	zapslog.New(nil, nil).Error("dropped")

	var buf bytes.Buffer
	z := zapslog.New(slog.New(slog.NewTextHandler(&buf, nil)), nil)
	z.Warn("below error")
	if buf.Len() != 0 {
		t.Errorf("nil min forwarded a warning: %s", buf.String())
	}
	z.Error("shown")
	if !strings.Contains(buf.String(), "level=ERROR") {
		t.Errorf("nil min dropped an error: %q", buf.String())
	}
}
