package release

import (
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
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
			return append(e2e.PostgresCoord(t), "demo", "--ttl", "2s") // --postgres alone selects it
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e2e.RunTenure(t, nil, tc.args(t)...)
			if res.Code != 0 {
				t.Fatalf("%s: exit %d; want 0\n%s\n%s", res.Description, res.Code, res.Stdout, res.Stderr)
			}
			for _, w := range []string{"leads", "cut off", "takes over", "rejected", "Done in"} {
				if !strings.Contains(res.Stdout, w) {
					t.Errorf("%s: output does not say %q:\n%s", res.Description, w, res.Stdout)
				}
			}
			if tc.name == "postgres" && !strings.Contains(res.Stdout, "PostgreSQL") {
				t.Errorf("%s: output does not say it runs on PostgreSQL:\n%s", res.Description, res.Stdout)
			}
			if res.Took > time.Minute {
				t.Errorf("%s took %s; want under a minute", res.Description, res.Took)
			}
		})
	}
}
