package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// leaseDoc describes the lease file, for tenure run --help and lease check
// --help.
const leaseDoc = `The lease file (TENURE_LEASE_FILE) is one JSON object, replaced atomically
(write, then rename) by tenure run's guard process whenever the lease
changes, so it stays truthful even while tenure itself is stopped:

  {"key":"jobs","holder":"web-1","instance":"3f9c2a1b","token":42,
   "deadline_boot_ns":123456789000,"ttl_ms":10000,"live":true}

The lease is safely held while "live" is true and CLOCK_BOOTTIME (Linux's
clock that counts suspended time, in nanoseconds; clock_gettime(2)) is
below "deadline_boot_ns". That is the clock of tenure run's time namespace:
a reader in a time namespace of its own (unshare --time, a container
restored with a boot-clock offset) takes its namespace's boottime offset
(/proc/self/timens_offsets) away from its reading and adds
"boot_offset_ns" (tenure run's; absent when 0). "tenure lease check" does
exactly this test; a file it cannot read, cut short or absent, or a boot
clock it cannot place, is "not held". tenure never hands
the key over while the file says it is held: not when the command ends, and
not when tenure or the guard is stopped or killed (docs/run.md).`

// leaseCheckResult is the --json output of tenure lease check.
type leaseCheckResult struct {
	Held      bool   `json:"held"`
	Key       string `json:"key,omitempty"`
	Holder    string `json:"holder,omitempty"`
	Instance  string `json:"instance,omitempty"`
	Token     uint64 `json:"token,omitempty"`
	TTLLeftMs int64  `json:"ttl_left_ms"`
	TTLMs     int64  `json:"ttl_ms,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

func newLeaseCommand() *cobra.Command {
	lease := &cobra.Command{
		Use:   "lease",
		Short: "Ask, from inside a command that tenure run started, whether its lease is held",
		Args:  noArgs,
	}
	var asJSON bool
	var file string
	check := &cobra.Command{
		Use:   "check",
		Short: "Exit 0 and print the fencing token only while the lease is safely held",
		Long: `check tells a command started by "tenure run" whether the lease it runs
under is still safely held: it exits 0 and prints the fencing token while
the term is live and its local deadline has not passed, and exits 1 with
the reason otherwise. Use it right before each action, as in:

  tenure lease check && do_write

It reads the lease file named by TENURE_LEASE_FILE (or --lease-file).

` + leaseDoc + `

Exit codes:
  0    the lease is held (the token is printed)
  1    it is not (the term ended, the deadline passed, or no lease file)
  2    bad flags or arguments
  70   tenure itself failed (EX_SOFTWARE)`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLeaseCheck(cmd, file, asJSON)
		},
	}
	check.Flags().BoolVar(&asJSON, "json", false, `print {"held":…,"token":…,"ttl_left_ms":…} instead of the token`)
	check.Flags().StringVar(&file, "lease-file", "", "the lease file (default $TENURE_LEASE_FILE)")
	lease.AddCommand(check)
	return lease
}

func runLeaseCheck(cmd *cobra.Command, file string, asJSON bool) error {
	if file == "" {
		file = os.Getenv("TENURE_LEASE_FILE")
	}
	res := leaseCheckResult{}
	var err error
	if file == "" {
		err = errors.New("TENURE_LEASE_FILE is not set: run this inside a command started by tenure run")
	} else {
		var l guard.Lease
		var now boottime.Instant
		if l, err = guard.ReadLease(file); err == nil {
			now, err = l.Now() // on tenure run's boot clock, whatever time namespace this runs in
		}
		if err == nil {
			res = leaseCheckResult{Key: l.Key, Holder: l.Holder, Instance: l.Instance, Token: l.Token, TTLMs: l.TTLMs,
				TTLLeftMs: max(l.Deadline.Sub(now), 0).Milliseconds()}
			err = l.Check(now)
		}
	}
	res.Held = err == nil
	if err != nil {
		res.Reason, res.TTLLeftMs = err.Error(), 0
	}
	out := cmd.OutOrStdout()
	if asJSON {
		if jerr := json.NewEncoder(out).Encode(res); jerr != nil {
			return jerr
		}
	} else if res.Held {
		fmt.Fprintln(out, res.Token)
	}
	if err != nil {
		msg := fmt.Errorf("lease not held: %w", err)
		if asJSON {
			msg = nil // the reason is in the JSON
		}
		return &exitError{code: ExitError, err: msg}
	}
	return nil
}
