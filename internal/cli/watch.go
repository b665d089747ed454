package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure"
)

type watchFlags struct {
	key  string
	json bool
}

func newWatchCommand(g *globalFlags) *cobra.Command {
	var f watchFlags
	cmd := &cobra.Command{
		Use:   "watch --key KEY [--json]",
		Short: "Print a line each time the leadership of a key changes",
		Long: `watch prints the current leadership of --key, then one line each time it
changes (a new term, a release, an expiry), until interrupted (SIGINT or
SIGTERM; it then exits 0). It follows the coordinator's change stream
and reconnects when the stream breaks; changes that happen faster than
the stream delivers them may be coalesced into the latest state.

Text lines look like:

  2026-01-02T15:04:05.123+01:00  jobs  leader web-1-4242-1f2e3d4c  token 42  ttl 10s
  2026-01-02T15:04:09.456+01:00  jobs  no leader

With --json, one JSON object per line:

  {"time":"2026-01-02T15:04:05.123+01:00","key":"jobs","held":true,"holder":"web-1-4242-1f2e3d4c","token":42,"ttl_ms":10000}
  {"time":"2026-01-02T15:04:09.456+01:00","key":"jobs","held":false}`,
		Example: `  tenure watch --key jobs
  tenure watch --key jobs --json | jq .holder`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.key == "" {
				return usageError("--key is required (see 'tenure watch --help')")
			}
			if err := tenure.ValidateKey(f.key); err != nil {
				return usageError("%s: %w", flagRef(cmd, "key"), err)
			}
			c, log, err := g.connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			return watchKey(cmd.Context(), c, f.key, newWatchPrinter(cmd.OutOrStdout(), f.json), log)
		},
	}
	cmd.Flags().StringVar(&f.key, "key", "", "the key to watch (required)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON lines")
	return cmd
}

// watchKey reports key's leadership to print on every change until ctx
// ends: through the coordinator's watch when it has one, re-opened when it
// breaks, else by polling.
func watchKey(ctx context.Context, c tenure.Coordinator, key string, print func(tenure.LeaderEvent) error, log *slog.Logger) error {
	const retry = time.Second
	var last *tenure.LeaderEvent
	report := func(ev tenure.LeaderEvent) error {
		if last != nil && last.Held == ev.Held && (!ev.Held ||
			last.Grant.Holder == ev.Grant.Holder && last.Grant.Token == ev.Grant.Token) {
			return nil
		}
		last = &ev
		return print(ev)
	}
	watcher, canWatch := c.(tenure.Watcher)
	for ctx.Err() == nil {
		if canWatch {
			events, err := watcher.Watch(ctx, key)
			if err == nil {
				for ev := range events {
					if err := report(ev); err != nil {
						return err
					}
				}
				if ctx.Err() != nil {
					break
				}
				log.Warn("watch stream ended; reconnecting", "key", key)
			} else if ctx.Err() == nil {
				log.Warn("watch failed; retrying", "key", key, "err", err)
			}
		} else {
			g, ok, err := c.Leader(ctx, key)
			if err == nil {
				if err := report(tenure.LeaderEvent{Key: key, Held: ok, Grant: g}); err != nil {
					return err
				}
			} else if ctx.Err() == nil {
				log.Warn("leader lookup failed; retrying", "key", key, "err", err)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(retry):
		}
	}
	return nil
}

// watchLine is one line of watch --json output.
type watchLine struct {
	Time   string `json:"time"`
	Key    string `json:"key"`
	Held   bool   `json:"held"`
	Holder string `json:"holder,omitempty"`
	Token  uint64 `json:"token,omitempty"`
	TTLMS  int64  `json:"ttl_ms,omitempty"`
}

const watchTimeFormat = "2006-01-02T15:04:05.000Z07:00"

func newWatchPrinter(w io.Writer, asJSON bool) func(tenure.LeaderEvent) error {
	enc := json.NewEncoder(w)
	return func(ev tenure.LeaderEvent) error {
		now := time.Now().Format(watchTimeFormat)
		if asJSON {
			l := watchLine{Time: now, Key: ev.Key, Held: ev.Held}
			if ev.Held {
				l.Holder, l.Token, l.TTLMS = ev.Grant.Holder, ev.Grant.Token, ev.Grant.TTL.Milliseconds()
			}
			return enc.Encode(l)
		}
		var err error
		if ev.Held {
			_, err = fmt.Fprintf(w, "%s  %s  leader %s  token %d  ttl %s\n", now, ev.Key, ev.Grant.Holder, ev.Grant.Token, roundTTL(ev.Grant.TTL))
		} else {
			_, err = fmt.Fprintf(w, "%s  %s  no leader\n", now, ev.Key)
		}
		return err
	}
}
