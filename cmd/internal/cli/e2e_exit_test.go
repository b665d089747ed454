package cli

import (
	"strings"
	"testing"
)

// TestExitCodesRun: tenure run's own failures have codes of their own
// (issue #21): a command that exits 1 ("false") exits 1, and a coordinator
// that cannot be reached exits 69 (EX_UNAVAILABLE), never 1.
func TestExitCodesRun(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir())
	res := runTenure(t, nil, "run", "--endpoints", s.endpoint, "--key", "exit-false", "--", "false")
	if res.code != 1 {
		t.Errorf("%s: exit %d; want 1, the command's own code\n%s", res.description, res.code, res.stderr)
	}
	res = runTenure(t, nil, "--dial-timeout", "1s", "--endpoints", "http://"+closedPort(t), "run", "--key", "exit-down", "--", "true")
	if res.code != ExitUnavailable || res.code == 1 {
		t.Errorf("%s: exit %d; want %d (the coordinator is unavailable), a code no command's failure is mistaken for\n%s",
			res.description, res.code, ExitUnavailable, res.stderr)
	}
	help := runTenure(t, nil, "run", "--help").stdout
	for _, want := range []string{"  69   the coordinator could not be reached", "  70   tenure itself failed"} {
		if !strings.Contains(help, want) {
			t.Errorf("tenure run --help does not list %q", want)
		}
	}
}
