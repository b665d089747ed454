package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-dev/tenure/internal/display"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure"
)

// restartBackoff is the least time between two starts of the command
// under --restart.
const restartBackoff = time.Second

// keyRun is tenure run for one key: an Elector campaigns, and the
// supervisor runs the command while it leads.
type keyRun struct {
	s     *supervisor
	coord tenure.Coordinator
	wait  *waitLimit
	ran   time.Duration // how long the last command ran: written by lead only
}

// runKey is tenure run --key KEY.
func runKey(cmd *cobra.Command, g *globalFlags, f *runFlags, args []string) error {
	cfg, path, err := checkRunFlags(cmd, g, f, args)
	if err != nil {
		return err
	}
	ctx, cancel, s, err := newSupervisor(cmd, g, f, args, path, stallPlan{cfg: cfg, grace: f.killGrace})
	if err != nil {
		return err
	}
	defer cancel()
	s.stdin = childStdin(cmd.InOrStdin())
	coord, stop, err := s.connect(ctx, cmd, g)
	if err != nil {
		return err
	}
	defer stop()
	k := &keyRun{s: s, coord: coord}
	el, stopHTTP, err := k.newElector(ctx, cmd, g, cfg)
	if err != nil {
		return err
	}
	defer stopHTTP()
	s.log.Info("campaigning", "key", f.key, "holder", f.holder, "ttl", f.ttl, "backend", g.coord.backend())
	lctx, lcancel := context.WithTimeout(ctx, g.coord.dialTimeout)
	defer lcancel()
	lg, ok, err := coord.Leader(lctx, f.key)
	switch {
	case err != nil && refused(err):
		// A permission missing now is not granted by waiting: campaigning
		// would only repeat "acquire failed".
		return &exitError{code: ExitNoPerm, err: err}
	case (err != nil || ok) && warnForeign(lctx, s.log, coord, f.key):
	case err == nil && ok:
		s.log.Info("key held; waiting for it", "key", f.key, "leader", lg.Holder, "token", lg.Token)
		warnTTLDisagreement(lctx, s.log, coord, lg, f.ttl)
	}
	lcancel()
	return s.result(s.stopOnRefusal(k.campaign(ctx, el)))
}

// newElector makes the elector of tenure run, with --http's metrics server
// (stopped by the returned stop) and --wait-timeout.
func (k *keyRun) newElector(ctx context.Context, cmd *cobra.Command, g *globalFlags, cfg tenure.Config) (*tenure.Elector, func(), error) {
	var err error
	// The elector's own records repeat what the transitions say; show its
	// warnings (failed and overdue renewals) unless debugging.
	if cfg.Logger, err = k.s.libraryLogger(ctx, cmd, g); err != nil {
		return nil, nil, err
	}
	stop := func() {}
	if k.s.f.http != "" {
		if stop, err = serveRunMonitor(k.s.f.web(), &cfg, &k.coord, k.s.log); err != nil {
			return nil, nil, err
		}
	}
	k.wait = newWaitLimit(k.s.f.waitTimeout, k.waitedTooLong)
	cfg.OnTransition = k.onTransition
	el, err := tenure.NewElector(k.coord, cfg)
	if err != nil {
		stop()
		return nil, nil, &exitError{code: ExitUsage, err: configFlagNames(err)}
	}
	return el, stop, nil
}

// waitedTooLong ends tenure when --wait-timeout passes without leading,
// naming the holder.
func (k *keyRun) waitedTooLong() {
	f := k.s.f
	k.s.log.Warn("not leader within --wait-timeout; giving up", "key", f.key, "wait_timeout", f.waitTimeout)
	msg := fmt.Sprintf("not leader of %q within --wait-timeout (%s)", f.key, f.waitTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if g, ok, err := k.coord.Leader(ctx, f.key); err == nil && ok {
		msg += fmt.Sprintf(": held by %s (token %d)", display.Holder(g.Holder), g.Token)
	}
	k.s.finish(outcome{byWait, &exitError{code: ExitNotReady, err: errors.New(msg)}})
	k.s.cancel()
}

// campaign leads until the command has run (or, with --restart, until
// tenure stops) and returns the elector's error.
func (k *keyRun) campaign(ctx context.Context, el *tenure.Elector) error {
	defer k.s.dropSpare()
	for {
		k.wait.campaigning()
		k.s.prepare()
		runErr := el.Run(ctx, k.lead)
		k.wait.stop()
		if !k.s.f.restart || ctx.Err() != nil || k.s.stopping() || runErr != nil {
			return runErr
		}
		// A command that fails at once must not turn tenure into a loop
		// of grants and releases.
		wait := max(restartBackoff-k.ran, 0)
		k.s.log.Info("command exited; campaigning again (--restart)", "key", k.s.f.key, "after", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// lead runs the command for term t; it is the elector's leader function.
func (k *keyRun) lead(ctx context.Context, t *tenure.Term) error {
	end := k.s.runCommand(ctx, t, termEnv(t))
	if end.ran > 0 {
		k.ran = end.ran
	}
	k.s.prepare() // for the next term, unless tenure is ending
	return end.err
}

func (k *keyRun) onTransition(t tenure.Transition) {
	if t.Kind == tenure.Elected {
		k.wait.elected()
	} else if t.Kind != tenure.Resigned {
		k.wait.campaigning() // the elector campaigns again
	}
	logTransition(k.s.log, t)
	k.s.termEnded(t)
}
