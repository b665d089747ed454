package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

func TestEnvName(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"endpoints", "TENURE_ENDPOINTS"},
		{"wait-timeout", "TENURE_WAIT_TIMEOUT"},
		{"tls-ca", "TENURE_TLS_CA"},
		{"log-level", "TENURE_LOG_LEVEL"},
	} {
		if got := envName(tc.flag); got != tc.want {
			t.Errorf("envName(%q) = %q; want %q", tc.flag, got, tc.want)
		}
	}
}

// TestBindEnv: an environment twin sets a flag the command line left
// alone, the command line wins, and a malformed value is a usage error
// naming the variable.
func TestBindEnv(t *testing.T) {
	newCmd := func() (*cobra.Command, *time.Duration, *string) {
		var d time.Duration
		var s string
		cmd := &cobra.Command{Use: "x"}
		cmd.Flags().DurationVar(&d, "wait-timeout", time.Second, "")
		cmd.Flags().StringVar(&s, "key", "", "")
		return cmd, &d, &s
	}
	env := map[string]string{"TENURE_WAIT_TIMEOUT": "3s", "TENURE_KEY": "from-env"}

	cmd, d, s := newCmd()
	if err := cmd.Flags().Parse([]string{"--key", "from-flag"}); err != nil {
		t.Fatal(err)
	}
	if err := bindEnv(cmd, func(k string) string { return env[k] }); err != nil {
		t.Fatalf("bindEnv() = %v", err)
	}
	if *d != 3*time.Second || *s != "from-flag" {
		t.Errorf("wait-timeout, key = %s, %q; want 3s (env), from-flag (flag wins)", *d, *s)
	}
	if got := flagRef(cmd, "wait-timeout"); got != "TENURE_WAIT_TIMEOUT (--wait-timeout)" {
		t.Errorf("flagRef(wait-timeout) = %q; want the env twin named", got)
	}
	if got := flagRef(cmd, "key"); got != "--key" {
		t.Errorf("flagRef(key) = %q; want --key", got)
	}

	cmd, _, _ = newCmd()
	err := bindEnv(cmd, func(k string) string {
		if k == "TENURE_WAIT_TIMEOUT" {
			return "soon"
		}
		return ""
	})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitUsage || !strings.Contains(err.Error(), `TENURE_WAIT_TIMEOUT="soon"`) {
		t.Errorf("bindEnv(TENURE_WAIT_TIMEOUT=soon) = %v; want a usage error naming it", err)
	}
}

// TestMainExitCodes runs Main in process for outcomes that need no
// coordinator.
func TestMainExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, ExitOK, "Exit codes"},
		{[]string{"--help"}, ExitOK, "5    tenure verify: could not run, or the run proved nothing"},
		{[]string{"verify", "--help"}, ExitOK, "5    inconclusive: the run could not be done, or proved nothing"},
		{[]string{"run", "--help"}, ExitOK, "display name (default: the host name, the process id and a random suffix)\n"},
		{[]string{"run", "--key", "k"}, ExitUsage, "needs a command"},
		{[]string{"nosuchcommand"}, ExitUsage, "unknown command"},
		{[]string{"demo", "--nodes", "1"}, ExitUsage, "--nodes (1)"},
		{[]string{"demo", "--backend", "memory", "--ttl", "1h"}, ExitUsage, "--ttl (1h0m0s)"},
		{[]string{"run", "--key", "k", "--", "no-such-command-tenure-test"}, ExitNotFound, "no-such-command-tenure-test"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), tc.args, strings.NewReader(""), &out, &errb)
		if code != tc.code {
			t.Errorf("Main(%q) = %d; want %d\nstderr: %s", tc.args, code, tc.code, errb.String())
		}
		if !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("Main(%q) output %q; want it to mention %q", tc.args, out.String()+errb.String(), tc.want)
		}
	}
}

// TestWaitLimit: the limit fires only while campaigning, is reset by each
// new campaign, and never after an election.
func TestWaitLimit(t *testing.T) {
	var fired atomic.Int32
	w := newWaitLimit(50*time.Millisecond, func() { fired.Add(1) })
	w.campaigning()
	w.elected()
	time.Sleep(100 * time.Millisecond)
	if fired.Load() != 0 || w.fired() {
		t.Fatal("wait limit fired after an election; want it stopped")
	}
	w.campaigning() // leadership lost: campaigning again
	deadline := time.Now().Add(2 * time.Second)
	for fired.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if fired.Load() != 1 || !w.fired() {
		t.Fatalf("wait limit fired %d times while campaigning; want 1", fired.Load())
	}
	w.campaigning()
	time.Sleep(100 * time.Millisecond)
	if fired.Load() != 1 {
		t.Errorf("wait limit fired %d times; want once for good", fired.Load())
	}

	never := newWaitLimit(0, func() { t.Error("a zero wait limit fired") })
	never.campaigning()
	time.Sleep(10 * time.Millisecond)
	never.stop()
}

// TestMainInProcess runs status and watch through Main in this process,
// so that the leak check of TestMain covers their goroutines (etcd client,
// watch) after they return.
func TestMainInProcess(t *testing.T) {
	s := e2e.StartServer(t, t.TempDir())
	var out, errb bytes.Buffer
	if code := Main(t.Context(), []string{"--endpoints", s.Endpoint, "status", "--key", "inproc"}, nil, &out, &errb); code != 0 {
		t.Fatalf("status: exit %d\n%s", code, errb.String())
	}
	if got, want := strings.TrimSpace(out.String()), "coordinator: etcd at "+s.Endpoint+"\ninproc: no leader"; got != want {
		t.Errorf("status output %q; want %q", got, want)
	}

	out.Reset()
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	if code := Main(ctx, []string{"--endpoints", s.Endpoint, "watch", "--key", "inproc"}, nil, &out, &errb); code != 0 {
		t.Fatalf("watch: exit %d when its context ended; want 0\n%s", code, errb.String())
	}
	if !strings.Contains(out.String(), "inproc  no leader") {
		t.Errorf("watch output %q; want the key's current state", out.String())
	}
}
