package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

// partitionsReport is what the test reads of the JSON report of tenure
// bench partitions --json.
type partitionsReport struct {
	Backend           string  `json:"backend"`
	Partitions        int     `json:"partitions"`
	Members           int     `json:"members"`
	Cap               int     `json:"cap"`
	MaxOwned          int     `json:"max_owned"`
	WritesPerSecond   float64 `json:"writes_per_second"`
	ReferenceWritesPS float64 `json:"reference_writes_per_second"`
	WritesRatio       float64 `json:"writes_ratio"`
	CrashP99MS        float64 `json:"crash_p99_ms"`
	StaleTokens       int     `json:"stale_tokens"`
}

// TestBenchPartitions runs tenure bench partitions with a tiny group on the
// etcd it starts and on PostgreSQL: the JSON report parses, the group is
// balanced at ⌈P/N⌉, no partition ran again with a token not greater, the
// writes were counted at the server, and a crashed member's partitions were
// not taken over before its lease could have expired. The --html page
// renders in headless Chromium with the CDFs of the hand-overs and of the
// takeovers, and every figure beside its target.
func TestBenchPartitions(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"etcd", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			page := filepath.Join(t.TempDir(), "partitions.html")
			steady := "1s"
			if backend == "postgres" {
				// PostgreSQL counts the writes from its statistics, which
				// each server process reports about once a second at most:
				// a second's window held none on a loaded machine (the
				// reference run's, 4 a second).
				steady = "3s"
			}
			args := []string{"bench", "partitions", "--partitions", "20", "--members", "2", "--ttl", "2s", "--reference", "4", "--steady", steady, "--json", "--html", page}
			if backend == "postgres" {
				args = append(e2e.PostgresCoord(t), args...)
			}
			res := e2e.RunTenure(t, e2e.CleanEnv(), args...)
			if res.Code != 0 {
				t.Fatalf("%s: exit %d\n%s", res.Description, res.Code, res.Stderr)
			}
			var r partitionsReport
			if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
				t.Fatalf("%s: JSON does not parse: %v\n%s", res.Description, err, res.Stdout)
			}
			if r.Backend != backend || r.Partitions != 20 || r.Members != 2 || r.Cap != 10 {
				t.Errorf("report backend %q, P=%d, N=%d, cap %d; want %s, 20, 2, 10", r.Backend, r.Partitions, r.Members, r.Cap, backend)
			}
			if r.MaxOwned > r.Cap || r.StaleTokens != 0 {
				t.Errorf("max owned %d (cap %d), stale tokens %d; want ≤ cap and 0", r.MaxOwned, r.Cap, r.StaleTokens)
			}
			if r.WritesPerSecond <= 0 || r.ReferenceWritesPS <= 0 || r.WritesRatio <= 0 {
				t.Errorf("writes/s %.2f, reference %.2f, ratio %.3f; want all > 0 (counted at the server)", r.WritesPerSecond, r.ReferenceWritesPS, r.WritesRatio)
			}
			// The crashed member renewed at most a renew interval (TTL/3)
			// before it stopped: its lease had at least 2/3 of 2s left.
			if r.CrashP99MS < 1000 {
				t.Errorf("crash takeover p99 %.0fms; want ≥ 1000ms (no takeover before the lease can expire)", r.CrashP99MS)
			}
			html, err := os.ReadFile(page)
			if err != nil {
				t.Fatalf("--html: %v", err)
			}
			for _, want := range []string{"planned-leave hand-over", "crash takeover", "moves on a join: ", "(target ≤ 1s)"} {
				if !strings.Contains(string(html), want) {
					t.Errorf("page does not show %q", want)
				}
			}
			if backend == "etcd" {
				checkRendered(t, page, 2, 2)
			}
		})
	}
}
