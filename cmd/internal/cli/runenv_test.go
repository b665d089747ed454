package cli

import (
	"slices"
	"testing"

	"github.com/spf13/cobra"
)

// TestCommandEnv: the command's environment keeps everything but tenure's
// own variables (every flag's twin, secrets among them) and the term's
// variables, which are set afresh.
func TestCommandEnv(t *testing.T) {
	in := []string{
		"PATH=/bin", "HOME=/root", "TENURE_E2E_CHILD=fence",
		"TENURE_PASSWORD=secret", "TENURE_USER=root", "TENURE_POSTGRES=postgres://u:p@db/x",
		"TENURE_ENDPOINTS=http://e:2379", "TENURE_TLS_KEY=/k.pem", "TENURE_TLS_CERT=/c.pem",
		"TENURE_TLS_CA=/ca.pem", "TENURE_DIAL_TIMEOUT=5s", "TENURE_LOG_LEVEL=debug",
		"TENURE_KILL_GRACE=1s", "TENURE_KEY=outer", "TENURE_HOLDER=outer", "TENURE_FENCING_TOKEN=9",
		"TENURE_LEASE_FILE=/tmp/x", "TENURE_INSTANCE=abc", "TENURE_LEASE_TTL=2s",
	}
	got := commandEnv(newRootCommand(), in)
	want := []string{"PATH=/bin", "HOME=/root", "TENURE_E2E_CHILD=fence"}
	if !slices.Equal(got, want) {
		t.Fatalf("commandEnv = %q; want %q", got, want)
	}
}

// TestBindEnvInsideCommand: inside a command of tenure run (its lease file
// set), TENURE_KEY and TENURE_HOLDER describe the parent's term and do not
// set --key and --holder; outside, they do.
func TestBindEnvInsideCommand(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"outside", map[string]string{"TENURE_KEY": "k", "TENURE_HOLDER": "h"}, "k h"},
		{"inside", map[string]string{"TENURE_KEY": "k", "TENURE_HOLDER": "h", "TENURE_LEASE_FILE": "/tmp/l"}, " "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var key, holder string
			cmd := &cobra.Command{Use: "x"}
			cmd.Flags().StringVar(&key, "key", "", "")
			cmd.Flags().StringVar(&holder, "holder", "", "")
			if err := bindEnv(cmd, func(k string) string { return tc.env[k] }); err != nil {
				t.Fatal(err)
			}
			if got := key + " " + holder; got != tc.want {
				t.Errorf("--key --holder = %q; want %q", got, tc.want)
			}
		})
	}
}
