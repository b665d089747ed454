package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure/cmd/internal/chaos"
)

// verify --partitions N passes N to the run; a count the register cannot
// serve is a usage error that names the flag's value.
func TestVerifyPartitionsFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    int
		wantErr string
	}{
		{nil, 0, ""},
		{[]string{"--partitions", "16"}, 16, ""},
		{[]string{"--partitions", "-1"}, 0, "--partitions (-1)"},
		{[]string{"--partitions", "100000"}, 0, "--partitions (100000)"},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			o, err := verifyOptions(t, tc.args...)
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("options(%v) error = %v; want one naming %q", tc.args, err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatalf("options(%v) = %v", tc.args, err)
			case tc.wantErr == "" && o.Partitions != tc.want:
				t.Errorf("options(%v).Partitions = %d; want %d", tc.args, o.Partitions, tc.want)
			}
		})
	}
}

// verify's usage errors name the flag the user set, not the library's field.
func TestVerifyErrorsNameFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nodes", "1"}, "--nodes (1) must be between 2 and 9"},
		{[]string{"--members", "2"}, "--members (2) must be 1 or 3"},
		{[]string{"--duration", "1s"}, "--duration (1s) must be at least 5s"},
		{[]string{"--partitions", "-1"}, "--partitions (-1) must be between 0 and"},
		{[]string{"--ttl", "-1s"}, "--ttl"},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			_, err := verifyOptions(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("options(%v) error = %v; want one containing %q", tc.args, err, tc.want)
			}
			if strings.Contains(err.Error(), "Options.") || strings.Contains(err.Error(), "Config.") {
				t.Errorf("options(%v) error = %v; names a library field", tc.args, err)
			}
		})
	}
}

// verifyOptions returns the chaos options verify's flags args give.
func verifyOptions(t *testing.T, args ...string) (chaos.Options, error) {
	t.Helper()
	cmd, f := parseVerify(t, args...)
	var g globalFlags
	return f.options(cmd, &g)
}

// parseVerify returns verify's flags parsed from args, and the command
// they were parsed on.
func parseVerify(t *testing.T, args ...string) (*cobra.Command, *verifyFlags) {
	t.Helper()
	var f verifyFlags
	cmd := &cobra.Command{Use: "verify"}
	f.bind(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return cmd, &f
}
