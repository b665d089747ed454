package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/tenure-dev/tenure/kube"
	"github.com/tenure-dev/tenure/postgres"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure"
)

type watchFlags struct {
	key    string
	prefix string
	json   bool
}

func newWatchCommand(g *globalFlags) *cobra.Command {
	var f watchFlags
	cmd := &cobra.Command{
		Use:   "watch (--key KEY | --prefix PREFIX) [--json]",
		Short: "Print a line each time the leadership of a key changes, or the coordinator becomes unreachable",
		Long: `watch prints the current leadership of --key (or of every key under
--prefix), then one line each time it changes (a new term, a release, an
expiry), until interrupted (SIGINT or SIGTERM; it then exits 0).

With --key it follows the coordinator's change stream and reconnects when
the stream breaks; with --prefix it polls the coordinator twice a second.
Either way, changes faster than that may be coalesced into the latest state.

It also asks the coordinator every second who leads: when that fails, it
prints that the coordinator is unreachable (a leader shown before may be
gone), and when it answers again, that it is reachable, then the
leadership as it is now.

Text output starts with the coordinator watched; its lines look like:

  coordinator: etcd at http://127.0.0.1:2379
  2026-01-02T15:04:05.123+01:00  jobs  holder web-1 (instance 3f9c2a1b)  token 42  ttl 10s
  2026-01-02T15:04:09.456+01:00  jobs  no leader
  2026-01-02T15:04:12.000+01:00  jobs  coordinator unreachable: <the error>
  2026-01-02T15:04:30.500+01:00  jobs  coordinator reachable again after 18.5s

With --json, one JSON object per line; "event" is leader, no_leader,
unreachable or reachable; durations are integer milliseconds:

  {"time":"…","event":"leader","key":"jobs","held":true,"holder":"web-1","instance":"3f9c2a1b","token":42,"ttl_ms":10000}
  {"time":"…","event":"no_leader","key":"jobs","held":false}
  {"time":"…","event":"unreachable","key":"jobs","error":"…"}
  {"time":"…","event":"reachable","key":"jobs","down_ms":18500}

Every JSON line also carries "coordinator" (as "etcd at http://…").
ttl_ms is the lease granted. Under --prefix, and on PostgreSQL and
Kubernetes (whose records keep when a lease ends, not its TTL), lines carry
ttl_left_ms (the time left on the lease, as status shows it) instead; under --prefix the coordinator
events carry "prefix" instead of "key". A membership record
that no member wrote of group --key, or of a group under --prefix, which
status lists, is printed as event foreign_member when it appears, with
"member", and foreign_member_gone when it is gone.`,
		Example: `  tenure watch --key jobs
  tenure watch --prefix orders/ --json | jq .holder`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, g) },
	}
	cmd.Flags().StringVar(&f.key, "key", "", "the key to watch")
	cmd.Flags().StringVar(&f.prefix, "prefix", "", `watch every key that starts with this ("" for all)`)
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON lines")
	return cmd
}

// run watches --key or --prefix until the command's context ends.
func (f *watchFlags) run(cmd *cobra.Command, g *globalFlags) error {
	byKey, err := keyOrPrefix(cmd, f.key, f.prefix)
	if err != nil {
		return err
	}
	c, log, err := g.connect(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	p := &watchPrinter{w: cmd.OutOrStdout(), asJSON: f.json, enc: json.NewEncoder(cmd.OutOrStdout()), coordinator: g.coord.chosen}
	if !f.json {
		fmt.Fprintf(p.w, "coordinator: %s\n", p.coordinator)
	}
	if byKey {
		return watchKey(cmd.Context(), c, f.key, p, log)
	}
	return watchPrefix(cmd.Context(), c, f.prefix, p)
}

// How often watch asks the coordinator who leads, and how long it waits
// for the answer before it calls the coordinator unreachable.
const (
	watchProbeEvery   = time.Second
	watchProbeTimeout = 3 * time.Second
	watchPrefixEvery  = 500 * time.Millisecond
)

// watchKey reports key's leadership to p on every change until ctx ends:
// through the coordinator's watch when it has one (re-opened when it
// breaks), and through a lookup every watchProbeEvery that also finds the
// coordinator unreachable and reachable again. It reports the membership
// records of group key that no member wrote too, as a memberFeed reads
// them: nothing the loop does waits for that read.
func watchKey(ctx context.Context, c tenure.Coordinator, key string, p *watchPrinter, log *slog.Logger) error {
	st := &watchState{p: p, scope: watchScope{key: key, left: readsTimeLeft(c)}}
	events := make(chan tenure.LeaderEvent)
	streamDone := make(chan struct{})
	sctx, stop := context.WithCancel(ctx)
	feed := newMemberFeed(c, key)
	defer func() { stop(); <-streamDone; <-feed.done }()
	go func() { defer close(streamDone); streamLeader(sctx, c, key, events, log) }()
	go feed.run(sctx)
	tick := time.NewTimer(0)
	defer tick.Stop()
	for {
		wasDown := !st.since.IsZero()
		select {
		case <-ctx.Done():
			return nil
		case ev := <-events:
			if err := st.up(); err != nil {
				return err
			}
			if err := st.leader(asRecorded(ctx, c, ev)); err != nil {
				return err
			}
		case rs := <-feed.reads:
			if wasDown {
				break // read before the outage: read again once reachable
			}
			if err := st.memberRecords(rs); err != nil {
				return err
			}
		case <-tick.C:
			ev, err := probeKey(ctx, c, key)
			if ctx.Err() != nil {
				return nil
			}
			if err := st.probed(err, ev); err != nil {
				return err
			}
			ask(feed.lookup)
			tick.Reset(watchProbeEvery)
		}
		if wasDown && st.since.IsZero() {
			ask(feed.resync) // up forgot the records shown
		}
	}
}

// streamLeader sends key's change events to events until ctx ends,
// re-opening the coordinator's watch when it breaks.
func streamLeader(ctx context.Context, w tenure.Coordinator, key string, events chan<- tenure.LeaderEvent, log *slog.Logger) {
	for ctx.Err() == nil {
		stream, err := w.Watch(ctx, key)
		if err == nil {
			for ev := range stream {
				select {
				case events <- ev:
				case <-ctx.Done():
				}
			}
		} else if ctx.Err() == nil {
			log.Debug("watch failed; retrying", "key", key, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(watchProbeEvery):
		}
	}
}

// watchPrefix reports the leadership of every key under prefix to p,
// polling the coordinator every watchPrefixEvery, until ctx ends.
func watchPrefix(ctx context.Context, l tenure.Coordinator, prefix string, p *watchPrinter) error {
	st := &watchState{p: p, scope: watchScope{prefix: &prefix}}
	known := map[string]tenure.Grant{}
	tick := time.NewTimer(0)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		pctx, cancel := context.WithTimeout(ctx, watchProbeTimeout)
		gs, err := l.List(pctx, prefix)
		var rs []tenure.ForeignRecord
		if err == nil {
			rs, err = foreignUnder(pctx, l, prefix)
		}
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if err := st.down(err); err != nil {
				return err
			}
		} else if err := st.listed(known, gs, rs); err != nil {
			return err
		}
		tick.Reset(watchPrefixEvery)
	}
}

// watchScope is what a watch follows: one key, or every key under a
// prefix.
type watchScope struct {
	key    string
	prefix *string
	// left says the grants seen carry the time left on their lease, not
	// the TTL granted: under a prefix (a listing), and on PostgreSQL.
	left bool
}

// watchState turns observations into printed events: each leadership
// once, and the coordinator's reachability when it changes.
type watchState struct {
	p     *watchPrinter
	scope watchScope
	last  map[string]tenure.LeaderEvent
	// maxToken is the greatest token seen per key, kept across outages.
	maxToken map[string]uint64
	since    time.Time // when the coordinator became unreachable; zero while reachable
	// members are the membership records shown (see memberRecords).
	members map[memberRecordID]bool
}

// recorded is a leadership event and, when a record tenure did not write
// holds the key, that record.
type recorded struct {
	tenure.LeaderEvent
	foreign *tenure.ForeignRecord
}

// asRecorded returns ev with the foreign record that holds its key, when
// one does (looked up when ev shows the key held): the event then shows
// the record.
func asRecorded(ctx context.Context, c tenure.Coordinator, ev tenure.LeaderEvent) recorded {
	if !ev.Held {
		return recorded{LeaderEvent: ev}
	}
	ctx, cancel := context.WithTimeout(ctx, watchProbeTimeout)
	defer cancel()
	r, ok, err := foreignOf(ctx, c, ev.Key)
	if err != nil || !ok {
		return recorded{LeaderEvent: ev}
	}
	return recordedForeign(r)
}

// probeKey asks the coordinator who leads key. A key held by a record
// tenure did not write reads as that record, even when the coordinator
// cannot read it as a grant (a Lease that names another key).
func probeKey(ctx context.Context, c tenure.Coordinator, key string) (recorded, error) {
	pctx, cancel := context.WithTimeout(ctx, watchProbeTimeout)
	g, held, err := c.Leader(pctx, key)
	cancel()
	ev := tenure.LeaderEvent{Key: key, Held: held, Grant: g}
	if err == nil {
		return asRecorded(ctx, c, ev), nil
	}
	pctx, cancel = context.WithTimeout(ctx, watchProbeTimeout)
	defer cancel()
	if r, ok, ferr := foreignOf(pctx, c, key); ferr == nil && ok {
		return recordedForeign(r), nil
	}
	return recorded{LeaderEvent: ev}, err
}

// recordedForeign is the event of a key held by foreign record r.
func recordedForeign(r tenure.ForeignRecord) recorded {
	g := tenure.Grant{Key: r.Key, Holder: r.Holder, Token: r.Token, TTL: r.TTL}
	return recorded{LeaderEvent: tenure.LeaderEvent{Key: r.Key, Held: true, Grant: g}, foreign: &r}
}

// probed records the result of a leadership lookup.
func (s *watchState) probed(err error, ev recorded) error {
	if err != nil {
		return s.down(err)
	}
	if err := s.up(); err != nil {
		return err
	}
	return s.leader(ev)
}

// down reports the coordinator unreachable, once per outage. A refusal of
// the credentials, the permission or the configuration (exit 77 or 78, as
// for status) is no outage: waiting does not end it, so watch ends.
func (s *watchState) down(err error) error {
	if code := causeCode(err); code == ExitNoPerm || code == ExitConfig {
		return &exitError{code: code, err: err}
	}
	if !s.since.IsZero() {
		return nil
	}
	s.since = time.Now()
	return s.p.print(WatchLine{Event: "unreachable", Key: s.scope.key, Prefix: s.scope.prefix, Error: errorMessage(err)})
}

// up reports the coordinator reachable again after an outage, and forgets
// what was shown before it, so that the next leadership is printed.
func (s *watchState) up() error {
	if s.since.IsZero() {
		return nil
	}
	down := time.Since(s.since).Milliseconds()
	s.since, s.last, s.members = time.Time{}, nil, nil
	return s.p.print(WatchLine{Event: "reachable", Key: s.scope.key, Prefix: s.scope.prefix, DownMS: &down})
}

// leader prints ev unless it is what was printed last for its key, or
// older than it: a lookup sent before a change can answer after the
// change's event, and a grant once gone never comes back. A foreign
// record's token is no fencing token: it is not compared with grants'.
func (s *watchState) leader(rec recorded) error {
	ev := rec.LeaderEvent
	last, ok := s.last[ev.Key]
	if ok && last.Held == ev.Held &&
		(!ev.Held || last.Grant.Holder == ev.Grant.Holder && last.Grant.Token == ev.Grant.Token) {
		return nil
	}
	if rec.foreign == nil && ev.Held && ok && (ev.Grant.Token < s.maxToken[ev.Key] || !last.Held && ev.Grant.Token == s.maxToken[ev.Key]) {
		return nil
	}
	if s.last == nil {
		s.last = map[string]tenure.LeaderEvent{}
	}
	if s.maxToken == nil {
		s.maxToken = map[string]uint64{}
	}
	s.last[ev.Key] = ev
	if rec.foreign == nil {
		s.maxToken[ev.Key] = max(s.maxToken[ev.Key], ev.Grant.Token)
	}
	return s.p.print(leaderLine(rec, s.scope.prefix != nil || s.scope.left))
}

// listed prints what changed under the prefix since known, and updates
// known.
func (s *watchState) listed(known map[string]tenure.Grant, gs []tenure.Grant, rs []tenure.ForeignRecord) error {
	if err := s.up(); err != nil {
		return err
	}
	foreign := map[string]tenure.ForeignRecord{}
	for _, r := range rs {
		foreign[r.Key] = r
	}
	now := map[string]bool{}
	for _, st := range withForeign(gs, rs, "") {
		if st.Member != "" {
			continue // see memberRecords
		}
		now[st.Key] = true
		known[st.Key] = st.grant
		ev := recorded{LeaderEvent: tenure.LeaderEvent{Key: st.Key, Held: true, Grant: st.grant}}
		if r, ok := foreign[st.Key]; ok {
			ev = recordedForeign(r)
		}
		if err := s.leader(ev); err != nil {
			return err
		}
	}
	for key := range known {
		if !now[key] {
			delete(known, key)
			if err := s.leader(recorded{LeaderEvent: tenure.LeaderEvent{Key: key}}); err != nil {
				return err
			}
		}
	}
	return s.memberRecords(rs)
}

// readsTimeLeft reports whether c's leadership reads carry the time left
// on a lease rather than the TTL granted: a PostgreSQL row keeps when the
// lease ends, and a Kubernetes Lease's time left is counted from its renew
// time.
func readsTimeLeft(c tenure.Coordinator) bool {
	switch c.(type) {
	case *postgres.Coordinator, *kube.Coordinator:
		return true
	}
	return false
}
