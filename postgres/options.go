package postgres

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults of the options: tenure's table and channel, to find with psql,
// and values to set others relative to.
const (
	// DefaultTable is the leadership table's default name.
	DefaultTable = "cluster_leadership"
	// DefaultSchema is the leadership table's default schema.
	DefaultSchema = "public"
	// DefaultChannel is the default LISTEN/NOTIFY channel.
	DefaultChannel = "tenure_leadership"
	// DefaultPollInterval is how often a watcher re-reads its key when no
	// notification arrives.
	DefaultPollInterval = time.Second
	// DefaultConnectTimeout bounds connecting to the server when the DSN
	// given to Dial has no connect_timeout.
	DefaultConnectTimeout = 10 * time.Second
)

// maxIdentLen is PostgreSQL's NAMEDATALEN-1: longer identifiers would be
// truncated silently.
const maxIdentLen = 63

// An Option configures a Coordinator that Dial or New makes.
type Option func(*options)

type options struct {
	schema       string
	table        string
	channel      string
	pollInterval time.Duration
	notify       Notify
	logger       *slog.Logger
}

// Notify says which changes a Coordinator announces on its LISTEN/NOTIFY
// channel.
//
// A transaction that sent a NOTIFY takes one global lock while it commits
// (PostgreSQL keeps one notification queue for the whole cluster), so every
// notifying statement serializes with every other notifying commit in the
// cluster: notifications cost throughput, however many keys there are.
type Notify int

const (
	// NotifyWatched announces acquisitions and releases only while some
	// Coordinator watches the key (it holds an advisory lock for the key
	// while it does), so that a key nobody waits for never takes the
	// notification lock. An expiry is never announced: watchers time it
	// from the lease's end. The default.
	NotifyWatched Notify = iota
	// NotifyAll announces every acquisition and every release, watched or
	// not (tenure's behaviour before NotifyWatched): every one of them
	// serializes on the notification lock.
	NotifyAll
)

// String names the mode as the bench command's output does.
func (n Notify) String() string {
	switch n {
	case NotifyWatched:
		return "watched"
	case NotifyAll:
		return "all"
	}
	return fmt.Sprintf("Notify(%d)", int(n))
}

// WithSchema puts the leadership table in schema, which must exist. Default
// DefaultSchema. The table is always named with its schema, never found
// through the search_path: two roles (or two connections) with different
// search_paths would otherwise find two different tables, and hand out the
// same key, with the same tokens, twice. For the same reason a temporary
// table (schema pg_temp, each session's own) is refused with ErrTableShape.
func WithSchema(schema string) Option { return func(o *options) { o.schema = schema } }

// WithTable names the leadership table. Default DefaultTable. A table
// that exists already must have the seed's columns, a unique index on
// resource alone, and no nondeterministic collation on resource or its
// unique indexes (under a case-insensitive one, keys that differ in case
// would be one key): Dial refuses another with ErrTableShape.
func WithTable(table string) Option { return func(o *options) { o.table = table } }

// WithChannel names the LISTEN/NOTIFY channel. Default DefaultChannel. Users
// pass it to Dial or New.
func WithChannel(channel string) Option { return func(o *options) { o.channel = channel } }

// WithPollInterval sets how often each watcher re-reads its key besides
// reacting to notifications and to its lease's expiry. Default
// DefaultPollInterval.
func WithPollInterval(d time.Duration) Option { return func(o *options) { o.pollInterval = d } }

// WithNotify sets which changes are announced to watchers. Default
// NotifyWatched.
func WithNotify(n Notify) Option { return func(o *options) { o.notify = n } }

// WithLogger sets where the coordinator logs (listener reconnections).
// Default: nowhere.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

func newOptions(opts []Option) (options, error) {
	o := options{schema: DefaultSchema, table: DefaultTable, channel: DefaultChannel, pollInterval: DefaultPollInterval}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	var errs []error
	ident := func(name, v string, optional bool) {
		switch {
		case v == "" && optional:
		case v == "":
			errs = append(errs, fmt.Errorf("%w: %s is empty", ErrInvalidOption, name))
		case len(v) > maxIdentLen:
			errs = append(errs, fmt.Errorf("%w: %s %q is %d bytes long; PostgreSQL identifiers are at most %d", ErrInvalidOption, name, v, len(v), maxIdentLen))
		}
		for _, r := range v {
			if r == 0 {
				errs = append(errs, fmt.Errorf("%w: %s %q contains a NUL byte", ErrInvalidOption, name, v))
				break
			}
		}
	}
	ident("WithSchema", o.schema, false)
	ident("WithTable", o.table, false)
	ident("WithChannel", o.channel, false)
	if o.notify < NotifyWatched || o.notify > NotifyAll {
		errs = append(errs, fmt.Errorf("%w: WithNotify (%s) must be NotifyWatched or NotifyAll", ErrInvalidOption, o.notify))
	}
	if o.pollInterval <= 0 {
		errs = append(errs, fmt.Errorf("%w: WithPollInterval (%s) must be positive", ErrInvalidOption, o.pollInterval))
	}
	return o, errors.Join(errs...)
}
