package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/tenure-dev/tenure"
)

// A Source yields pending work. Users implement it (or adapt a function with
// SourceFunc) for New.
type Source[T any] interface {
	// Fetch returns up to max pending items, or none when there is no work
	// now. It should return promptly when ctx ends, which happens when the
	// term ends or the worker is stopped. An error matching
	// tenure.ErrStaleToken (a fenced source) ends the term like a processing
	// error does; other errors are reported to the error handler and Fetch
	// is retried after the poll interval.
	Fetch(ctx context.Context, max int) ([]T, error)
}

// SourceFunc adapts a function to a Source. Users wrap their fetch function
// in it for New.
type SourceFunc[T any] func(ctx context.Context, max int) ([]T, error)

// Fetch calls f(ctx, max).
func (f SourceFunc[T]) Fetch(ctx context.Context, max int) ([]T, error) { return f(ctx, max) }

// A Processor does one item of work on behalf of the term whose fencing token
// is token: it must present token to every resource it changes. ctx is the
// term's context, cancelled when the term ends; a Processor should then
// return as soon as it can. An error matching tenure.ErrStaleToken means a
// resource has seen a newer leader: the worker steps the term down and
// returns the error. Users write it and pass it to New.
type Processor[T any] func(ctx context.Context, token uint64, item T) error

// Defaults of the options.
const (
	DefaultPollInterval = time.Second
	DefaultBatchSize    = 16
)

// Option configures a Worker that New makes.
type Option func(*config)

type config struct {
	logger       *slog.Logger
	pollInterval time.Duration
	batchSize    int
	minRemaining time.Duration
	onError      func(error) error
	errs         []error
}

// WithLogger sets the logger. Nil (the default) discards logs.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithPollInterval sets how long the worker waits before fetching again
// after the Source had no work or failed, or after a batch in which an item
// failed (so that an item that keeps failing is not retried in a hot loop),
// and between checks of the remaining lease (WithMinRemaining). It must be
// positive. Default 1s.
func WithPollInterval(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs = append(c.errs, invalid(fmt.Sprintf("WithPollInterval(%s): the poll interval must be positive", d)))
		}
		c.pollInterval = d
	}
}

// WithBatchSize sets the largest number of items asked of the Source in one
// fetch. It must be positive. Default 16.
func WithBatchSize(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.errs = append(c.errs, invalid(fmt.Sprintf("WithBatchSize(%d): the batch size must be positive", n)))
		}
		c.batchSize = n
	}
}

// WithMinRemaining makes the worker start a fetch or an item only when at
// least d remains until the term's local deadline (Term.Remaining): set it
// to the time an item is expected to take, so that work is not started that
// the lease cannot cover. While less remains the worker waits, one poll
// interval at a time, for a renewal to extend the term or for the term to
// end. It must not be negative, and should be well below the elector's safe
// lease minus its renew interval, or the worker will mostly wait. Default 0.
// It is for items that take a noticeable part of the lease.
func WithMinRemaining(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.errs = append(c.errs, invalid(fmt.Sprintf("WithMinRemaining(%s): the minimum must not be negative", d)))
		}
		c.minRemaining = d
	}
}

// WithErrorHandler sets what happens when Fetch or a Processor fails with an
// error that is not a stale token and not caused by the term's end: fn gets
// the error (wrapped with "worker: fetch: " or "worker: process: "); if it
// returns nil the worker goes on (after the poll interval, for a fetch), and
// if it returns an error Run returns that error. The default logs the error
// and goes on. fn is called from Run's goroutine. It counts, alerts on, or
// stops at failures.
func WithErrorHandler(fn func(error) error) Option {
	return func(c *config) {
		if fn == nil {
			c.errs = append(c.errs, invalid("WithErrorHandler(nil): the handler must not be nil"))
		}
		c.onError = fn
	}
}

// invalid reports a bad argument to New or an option. It matches
// tenure.ErrInvalidConfig.
type invalid string

func (e invalid) Error() string { return "worker: " + string(e) }

func (e invalid) Unwrap() error { return tenure.ErrInvalidConfig }

// Stats counts what a Worker has done, over all its runs (Worker.Stats).
type Stats struct {
	// Fetches is the number of calls to Source.Fetch.
	Fetches uint64
	// Processed is the number of items processed without error.
	Processed uint64
	// Failed is the number of items whose processing returned an error.
	Failed uint64
}

// A Worker runs a leader's work loop; see the package documentation. One
// Worker may run for many terms, one after another; Run must not be called
// concurrently. Users make one with New and call Run from the function they
// give Elector.Run.
type Worker[T any] struct {
	src  Source[T]
	proc Processor[T]
	cfg  config

	fetches, processed, failed atomic.Uint64
}

// New returns a Worker that fetches from src and processes with proc. It
// reports every bad argument, each error wrapping tenure.ErrInvalidConfig.
// Make it once, before the elector runs (see the package example).
func New[T any](src Source[T], proc Processor[T], opts ...Option) (*Worker[T], error) {
	cfg := config{pollInterval: DefaultPollInterval, batchSize: DefaultBatchSize}
	for _, opt := range opts {
		opt(&cfg)
	}
	if src == nil {
		cfg.errs = append(cfg.errs, invalid("New: the source must not be nil"))
	}
	if proc == nil {
		cfg.errs = append(cfg.errs, invalid("New: the processor must not be nil"))
	}
	if err := errors.Join(cfg.errs...); err != nil {
		return nil, err
	}
	cfg.errs = nil
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	if cfg.onError == nil {
		log := cfg.logger
		cfg.onError = func(err error) error {
			log.Warn("work failed", "err", err)
			return nil
		}
	}
	return &Worker[T]{src: src, proc: proc, cfg: cfg}, nil
}

// Stats returns the worker's counts so far.
func (w *Worker[T]) Stats() Stats {
	return Stats{Fetches: w.fetches.Load(), Processed: w.processed.Load(), Failed: w.failed.Load()}
}

// Run works for term until the term ends, ctx ends, a resource rejects the
// term's token, or the error handler returns an error.
//
// Before every fetch and every item, Run checks that the term is live
// (Term.Check), that ctx has not ended and that enough of the term remains
// (WithMinRemaining). Items are processed one at a time with the term's
// context and token.
//
// When the term ends or ctx ends, Run starts no new item; an item in flight
// is let finish (its context is the term's, so it sees the term's end but
// not ctx's) and Run returns after it: with the error of Term.Check, which
// matches tenure.ErrNotLeader, when the term ended, or ctx.Err() when ctx
// did. Called from Elector.Run, ctx is the context Elector.Run gives its
// function: it ends with the term and also when the elector resigns, while
// the term's own context stays live until the in-flight item has finished
// (or the local deadline passes).
//
// When processing or fetching fails with an error matching
// tenure.ErrStaleToken, Run steps the term down with it (Term.StepDown) and
// returns it.
func (w *Worker[T]) Run(ctx context.Context, term *tenure.Term) error {
	if term == nil {
		return errors.New("worker: Run needs a term")
	}
	// work is cancelled when either the term or ctx ends: it bounds fetches
	// and waits. Items get the term's own context.
	work, cancel := context.WithCancel(term.Context())
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()

	log := w.cfg.logger.With("key", term.Grant().Key, "token", term.Token())
	log.Debug("worker started")
	for {
		if err := w.ready(ctx, work, term, log); err != nil {
			return err
		}
		w.fetches.Add(1)
		items, err := w.src.Fetch(work, w.cfg.batchSize)
		if err != nil {
			if tenure.IsStale(err) {
				return w.fenced(term, err, log)
			}
			if work.Err() != nil {
				continue // the term or ctx ended: ready reports which
			}
			if herr := w.cfg.onError(fmt.Errorf("worker: fetch: %w", err)); herr != nil {
				return herr
			}
			w.wait(work)
			continue
		}
		if len(items) == 0 {
			w.wait(work)
			continue
		}
		failed, err := w.process(ctx, work, term, items, log)
		if err != nil {
			return err
		}
		if failed {
			// The failed items are likely fetched again at once: do not spin.
			w.wait(work)
		}
	}
}

// process processes items one at a time, each once ready says it may start,
// and reports whether one failed. It returns an error when Run must return
// it: the term or ctx ended, a resource rejected the token, or the error
// handler said so.
func (w *Worker[T]) process(ctx, work context.Context, term *tenure.Term, items []T, log *slog.Logger) (failed bool, err error) {
	for i, item := range items {
		if err := w.ready(ctx, work, term, log); err != nil {
			log.Debug("fetched items left unprocessed", "count", len(items)-i)
			return failed, err
		}
		err := w.proc(term.Context(), term.Token(), item)
		if err == nil {
			w.processed.Add(1)
			continue
		}
		w.failed.Add(1)
		failed = true
		if tenure.IsStale(err) {
			return failed, w.fenced(term, err, log)
		}
		if work.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, tenure.ErrNotLeader)) {
			continue // cut short by the end of the term or ctx; ready reports it
		}
		if herr := w.cfg.onError(fmt.Errorf("worker: process: %w", err)); herr != nil {
			return failed, herr
		}
	}
	return failed, nil
}

// ready returns nil when the next fetch or item may start: the term is live,
// ctx has not ended, and at least the minimum remains of the term. While too
// little remains it waits, a poll interval at a time.
func (w *Worker[T]) ready(ctx, work context.Context, term *tenure.Term, log *slog.Logger) error {
	for {
		if err := term.Check(); err != nil {
			log.Debug("worker stopping: term ended", "err", err)
			return err
		}
		if err := ctx.Err(); err != nil {
			log.Debug("worker stopping", "err", err)
			return err
		}
		rem := term.Remaining()
		if rem >= w.cfg.minRemaining {
			return nil
		}
		log.Debug("waiting for renewal: too little of the term remains", "remaining", rem, "min", w.cfg.minRemaining)
		w.wait(work)
	}
}

// wait waits for the poll interval, or until work ends.
func (w *Worker[T]) wait(work context.Context) {
	t := time.NewTimer(w.cfg.pollInterval)
	defer t.Stop()
	select {
	case <-t.C:
	case <-work.Done():
	}
}

// fenced steps term down because a resource rejected its token as stale,
// and returns err.
func (w *Worker[T]) fenced(term *tenure.Term, err error, log *slog.Logger) error {
	log.Warn("fenced by resource: stepping down", "err", err)
	term.StepDown(err)
	return err
}
