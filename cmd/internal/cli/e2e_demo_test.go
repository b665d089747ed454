package cli

import (
	"strings"
	"testing"
	"time"
)

// TestDemo: the demo tells its story on every backend and exits 0 within a
// minute.
func TestDemo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"etcd", func(*testing.T) []string { return []string{"demo", "--ttl", "2s"} }},
		{"memory", func(*testing.T) []string { return []string{"demo", "--backend", "memory", "--ttl", "1s"} }},
		{"postgres", func(t *testing.T) []string {
			return append(postgresCoord(t), "demo", "--ttl", "2s") // --postgres alone selects it
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runTenure(t, nil, tc.args(t)...)
			if res.code != 0 {
				t.Fatalf("%s: exit %d; want 0\n%s\n%s", res.description, res.code, res.stdout, res.stderr)
			}
			for _, w := range []string{"leads", "cut off", "takes over", "rejected", "Done in"} {
				if !strings.Contains(res.stdout, w) {
					t.Errorf("%s: output does not say %q:\n%s", res.description, w, res.stdout)
				}
			}
			if tc.name == "postgres" && !strings.Contains(res.stdout, "PostgreSQL") {
				t.Errorf("%s: output does not say it runs on PostgreSQL:\n%s", res.description, res.stdout)
			}
			if res.took > time.Minute {
				t.Errorf("%s took %s; want under a minute", res.description, res.took)
			}
		})
	}
}
