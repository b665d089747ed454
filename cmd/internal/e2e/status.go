package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// StatusJSON runs "tenure status --json" with args and decodes each of its
// lines into a T (the command's KeyStatus).
func StatusJSON[T any](t *testing.T, env []string, args ...string) []T {
	t.Helper()
	res := RunTenure(t, env, append([]string{"status", "--json"}, args...)...)
	if res.Code != 0 {
		t.Fatalf("%s: exit %d\n%s", res.Description, res.Code, res.Stderr)
	}
	var out []T
	for _, l := range Lines(res.Stdout) {
		var ks T
		if err := json.Unmarshal([]byte(l), &ks); err != nil {
			t.Fatalf("%s: line %q is not JSON: %v", res.Description, l, err)
		}
		out = append(out, ks)
	}
	return out
}

// HoldKey starts "tenure run --key key --holder holder -- sleep 60" and
// waits until it leads.
func HoldKey(t *testing.T, coord []string, key, holder string) *Proc {
	t.Helper()
	p := StartProc(t, holder, nil, append(coord, "run", "--key", key, "--holder", holder, "--ttl", "10s", "--", "sleep", "60")...)
	WaitFor(t, 10*time.Second, holder+" to lead "+key, func() bool { return strings.Contains(p.Err.String(), "command started") })
	return p
}

// AfterCoordinatorLine returns the text output of status after its first
// line, which names the coordinator asked.
func AfterCoordinatorLine(t *testing.T, stdout string) string {
	t.Helper()
	first, rest, _ := strings.Cut(strings.TrimSpace(stdout), "\n")
	if !strings.HasPrefix(first, "coordinator: ") {
		t.Fatalf("output %q does not start with the coordinator", stdout)
	}
	return rest
}

// CoordinatorLine returns the "using coordinator" record of stderr, or "".
func CoordinatorLine(stderr string) string {
	for _, l := range Lines(stderr) {
		if strings.Contains(l, `msg="using coordinator"`) {
			return l
		}
	}
	return ""
}
