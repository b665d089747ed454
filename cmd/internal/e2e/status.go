package e2e

import (
	"encoding/json"
	"testing"
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
