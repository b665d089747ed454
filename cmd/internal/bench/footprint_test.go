package bench

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// comm may hold spaces and parentheses; utime and stime are fields 14
	// and 15, in ticks of 10ms.
	line := []byte("4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 12345 1000 200\n")
	st, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if st.ppid != 17 || st.comm != "a (b) c" || st.cpu != 100*time.Millisecond {
		t.Errorf("parseStat = %+v; want ppid 17, comm %q, cpu 100ms", st, "a (b) c")
	}
	for _, bad := range []string{"4242 a S 17", "4242 (a) S 17 1 1", "4242 (a) S x 1 1 0 -1 0 0 0 0 0 7 3"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) = nil error; want one", bad)
		}
	}
}

func TestStatusBytes(t *testing.T) {
	status := []byte("Name:\tx\nVmHWM:\t  9000 kB\nVmRSS:\t  1234 kB\nRssAnon:\t 100 kB\n")
	for field, want := range map[string]int64{"VmRSS": 1234 << 10, "RssAnon": 100 << 10} {
		if got, err := statusBytes(status, field); err != nil || got != want {
			t.Errorf("statusBytes(%s) = %d, %v; want %d", field, got, err, want)
		}
	}
	for _, bad := range []string{"Name:\tx\n", "VmRSS:\t 12 MB\n", "VmRSS:\t x kB\n"} {
		if _, err := statusBytes([]byte(bad), "VmRSS"); err == nil {
			t.Errorf("statusBytes(%q) = nil error; want one", bad)
		}
	}
}

// TestReadUsage reads this process from /proc, and finds a child it starts
// by its name, and not another process.
func TestReadUsage(t *testing.T) {
	u, err := readUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.rss < 1<<20 || u.anon <= 0 || u.anon >= u.rss || u.cpu <= 0 {
		t.Errorf("readUsage(self) = %+v; want some MiB resident and some CPU used", u)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	kids, err := childrenNamed(os.Getpid(), "sleep")
	if err != nil || !slices.Contains(kids, cmd.Process.Pid) {
		t.Errorf("childrenNamed(self, sleep) = %v, %v; want %d among them", kids, err, cmd.Process.Pid)
	}
	if kids, _ := childrenNamed(os.Getpid(), "no-such-name"); len(kids) != 0 {
		t.Errorf("childrenNamed(self, no-such-name) = %v; want none", kids)
	}
}

// TestFootprintReport: the figures side by side, each ratio tenure's over
// etcdctl's, and a goal met exactly up to 1.5×.
func TestFootprintReport(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name                  string
		tenure, guard, peer   int64 // resident bytes
		tenureWall, peerWall  time.Duration
		wantMemory, wantWall  float64
		memoryMet, wallMet    bool
		memoryWinner, winWall string
	}{
		{"goals met", 27 * mib, 3 * mib, 20 * mib, 150 * time.Millisecond, 100 * time.Millisecond, 1.5, 1.5, true, true, "etcdctl-lock won", "etcdctl-lock won"},
		{"goals missed", 28 * mib, 3 * mib, 20 * mib, 151 * time.Millisecond, 100 * time.Millisecond, 1.55, 1.51, false, false, "etcdctl-lock won", "etcdctl-lock won"},
		{"tenure leaner", 8 * mib, 2 * mib, 20 * mib, 50 * time.Millisecond, 100 * time.Millisecond, 0.5, 0.5, true, true, "tenure won", "tenure won"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := footprinter{o: FootprintOptions{Runs: 1, Idle: time.Minute, TTL: 10 * time.Second, Etcdctl: "/nonexistent/etcdctl", Tenure: "tenure"}}
			lead := leadFigures{
				tenure:  procUsage{rss: tc.tenure, anon: tc.tenure / 4, cpu: 300 * time.Millisecond},
				guards:  procUsage{rss: tc.guard, anon: tc.guard / 4, cpu: 100 * time.Millisecond},
				etcdctl: procUsage{rss: tc.peer, anon: tc.peer / 4, cpu: 60 * time.Millisecond},
				window:  30 * time.Second, guardKind: "test",
			}
			runs := trueRuns{}
			runs.wall[0], runs.wall[1] = []time.Duration{tc.tenureWall}, []time.Duration{tc.peerWall}
			runs.cpu[0], runs.cpu[1] = []time.Duration{80 * time.Millisecond}, []time.Duration{40 * time.Millisecond}
			r := f.report(lead, runs, time.Now())
			var idle *Row
			for i, row := range r.Rows {
				if row.Impl == "tenure" && row.Case == caseIdleCPU {
					idle = &r.Rows[i]
				}
			}
			// 400ms over a 30s window is 800ms a minute, 120 for etcdctl.
			if idle == nil || idle.Usage.Value != 800 || idle.VsPeer != 6.67 {
				t.Errorf("idle CPU row %+v; want 800 ms/min, 6.67× etcdctl's 120", idle)
			}
			if len(r.Goals) != 2 {
				t.Fatalf("goals %+v; want 2", r.Goals)
			}
			mem, wall := r.Goals[0], r.Goals[1]
			if mem.Case != caseResident || mem.Ratio != tc.wantMemory || mem.Met != tc.memoryMet {
				t.Errorf("memory goal %+v; want ratio %.2f, met %v", mem, tc.wantMemory, tc.memoryMet)
			}
			if wall.Case != caseWall || wall.Ratio != tc.wantWall || wall.Met != tc.wallMet {
				t.Errorf("wall goal %+v; want ratio %.2f, met %v", wall, tc.wantWall, tc.wallMet)
			}
			var out bytes.Buffer
			if err := r.WriteTable(&out); err != nil {
				t.Fatal(err)
			}
			text := out.String()
			for _, want := range []string{
				"verdict: " + tc.memoryWinner + " (" + caseResident + ")",
				"verdict: " + tc.winWall + " (" + caseWall + ")",
				"goal (" + caseResident + "): tenure at most 1.50× etcdctl-lock",
				"MiB", "ms/min", "tenure_process", "guard_process", "anonymous",
			} {
				if !strings.Contains(text, want) {
					t.Errorf("table lacks %q:\n%s", want, text)
				}
			}
		})
	}
}

// TestFootprintOptions: every bad option is named at once.
func TestFootprintOptions(t *testing.T) {
	o := FootprintOptions{Target: Target{Postgres: "postgres://x"}, Runs: -1, Idle: time.Millisecond, TTL: 1500 * time.Millisecond}
	err := o.defaults()
	if err == nil {
		t.Fatal("defaults() = nil; want errors")
	}
	for _, want := range []string{"runs on etcd", "no tenure binary", "--runs -1", "--idle 1ms", "--ttl 1.5s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("defaults() = %v; want it to name %q", err, want)
		}
	}
}
