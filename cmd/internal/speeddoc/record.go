package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tenure-dev/tenure/cmd/internal/bench"
)

// A record is one measurement of the whole plan: docs/speed.json.
type record struct {
	// Commit is the full hash of HEAD when measured; Dirty is set when
	// the tree had changes not committed (outside docs/speed.*).
	Commit string `json:"commit"`
	Dirty  bool   `json:"dirty,omitempty"`
	// Date is when the measurement started, UTC (RFC 3339).
	Date     string  `json:"date"`
	Machine  machine `json:"machine"`
	ElapsedS float64 `json:"elapsed_s"`
	Runs     []run   `json:"runs"`
}

// machine is what the figures were measured on.
type machine struct {
	Cores      int    `json:"cores"`
	CPU        string `json:"cpu"`
	Kernel     string `json:"kernel"`
	Go         string `json:"go"`
	PostgreSQL string `json:"postgresql"`
}

// A run is one benchmark's outcome: its spec, the host's 1-minute load
// average before and after, and the report tenure bench --json printed.
type run struct {
	Name     string   `json:"name"`
	Backend  string   `json:"backend"`
	Args     []string `json:"args"`
	ElapsedS float64  `json:"elapsed_s"`
	// LoadBefore and LoadAfter are the host's 1-minute load average.
	LoadBefore float64 `json:"load_before"`
	LoadAfter  float64 `json:"load_after"`
	// Report is bench's Report; Partitions is tenure bench partitions'
	// report instead, for the partitions benchmark.
	Report     *bench.Report     `json:"report,omitempty"`
	Partitions *partitionsReport `json:"partitions,omitempty"`
	// Error is why the benchmark did not finish, if it did not.
	Error string `json:"error,omitempty"`
}

// partitionsReport is the part of tenure bench partitions --json that
// docs/speed.md shows.
type partitionsReport struct {
	Partitions      int     `json:"partitions"`
	Members         int     `json:"members"`
	TTLMS           int64   `json:"ttl_ms"`
	ColdStartMS     int64   `json:"cold_start_ms"`
	ClaimsPerSecond float64 `json:"claims_per_second"`
	MaxOwned        int     `json:"max_owned"`
	Cap             int     `json:"cap"`
	Imbalance       float64 `json:"imbalance"`
	WritesRatio     float64 `json:"writes_ratio,omitempty"`
	CPUPerMember    float64 `json:"cpu_per_member"`
	JoinMoves       int     `json:"join_moves"`
	LeaveMoves      int     `json:"leave_moves"`
	LeaveP99MS      float64 `json:"leave_p99_ms"`
	CrashP99MS      float64 `json:"crash_p99_ms"`
	CrashMaxMS      float64 `json:"crash_max_ms"`
	StaleTokens     int     `json:"stale_tokens"`
}

// decode fills r's report from what tenure bench --json printed; the
// samples behind latencies are dropped (docs/speed.md shows summaries).
func (r *run) decode(out []byte) error {
	if r.Args[0] == "partitions" {
		r.Partitions = new(partitionsReport)
		return json.Unmarshal(out, r.Partitions)
	}
	r.Report = new(bench.Report)
	if err := json.Unmarshal(out, r.Report); err != nil {
		return err
	}
	r.Report.Series = nil
	return nil
}

// readRecord reads docs/speed.json.
func readRecord(path string) (*record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &rec, nil
}

// write writes rec to path as indented JSON.
func (rec *record) write(path string) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// load1 is the host's 1-minute load average, or -1 when it cannot be read.
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
