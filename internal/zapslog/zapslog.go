// Package zapslog forwards records logged through a zap.Logger (the logger
// etcd's client and server take) to a log/slog handler, the only logging API
// tenure's own code uses.
package zapslog

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns a zap.Logger that sends every record at or above min to l. A
// nil l gives a no-op logger, so that a library that was given no logger
// writes nothing. A nil min means slog.LevelError.
func New(l *slog.Logger, min slog.Leveler) *zap.Logger {
	if l == nil {
		return zap.NewNop()
	}
	if min == nil {
		min = slog.LevelError
	}
	return zap.New(&core{h: l.Handler(), min: min})
}

// core is a zapcore.Core writing to a slog.Handler.
type core struct {
	h   slog.Handler
	min slog.Leveler
}

// Level maps a zap level to the slog level of the same meaning.
func Level(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	case l == zapcore.ErrorLevel:
		return slog.LevelError
	default: // DPanic, Panic, Fatal
		return slog.LevelError + 4
	}
}

func (c *core) Enabled(l zapcore.Level) bool {
	sl := Level(l)
	return sl >= c.min.Level() && c.h.Enabled(context.Background(), sl)
}

func (c *core) With(fs []zapcore.Field) zapcore.Core {
	if len(fs) == 0 {
		return c
	}
	return &core{h: c.h.WithAttrs(attrs(fs)), min: c.min}
}

func (c *core) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *core) Write(e zapcore.Entry, fs []zapcore.Field) error {
	r := slog.NewRecord(e.Time, Level(e.Level), e.Message, 0)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	r.AddAttrs(attrs(fs)...)
	return c.h.Handle(context.Background(), r)
}

func (c *core) Sync() error { return nil }

// attrs converts zap fields to slog attributes, in order.
func attrs(fs []zapcore.Field) []slog.Attr {
	out := make([]slog.Attr, 0, len(fs))
	for _, f := range fs {
		enc := zapcore.NewMapObjectEncoder()
		f.AddTo(enc)
		for k, v := range enc.Fields {
			out = append(out, slog.Any(k, v))
		}
	}
	return out
}
