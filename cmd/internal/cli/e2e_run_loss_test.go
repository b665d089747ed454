package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/etcdbin"
)

// lossTTL and the flags of lossFlags leave the command two seconds between
// the SIGTERM for an overdue renewal and the local deadline: time to exit
// (its guard to report it, even under the race detector) before the term
// ends, as with the default TTL of 10s.
const lossTTL = 5 * time.Second

var lossFlags = []string{"--ttl", lossTTL.String(), "--margin", "500ms", "--kill-grace", "2s"}

// lossCommand is a command that appends "start TOKEN" to out when it
// starts, then sleeps until a signal ends it: SIGTERM does, as with most
// programs (the helper "fence" ignores it).
func lossCommand(out string) []string {
	return []string{"sh", "-c", `echo "start $TENURE_FENCING_TOKEN" >>"$0"; exec sleep 3600`, out}
}

// starts returns the tokens the command of lossCommand started with.
func starts(t *testing.T, out string) []uint64 {
	t.Helper()
	b, err := os.ReadFile(out)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var tokens []uint64
	for _, l := range lines(string(b)) {
		n, err := strconv.ParseUint(strings.TrimPrefix(l, "start "), 10, 64)
		if err != nil {
			t.Fatalf("line %q of %s: %v", l, out, err)
		}
		tokens = append(tokens, n)
	}
	return tokens
}

// awaitStarts waits up to d for the command to have started n times and
// returns the tokens.
func awaitStarts(t *testing.T, p *proc, out string, n int, d time.Duration) []uint64 {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if tokens := starts(t, out); len(tokens) >= n {
			return tokens
		}
		if p.exited() {
			t.Fatalf("%s exited with %d before its command started %d times\n%s", p.name, p.code, n, p.err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("command started %d times within %s; want %d", len(starts(t, out)), d, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunStaysCandidate: stop the etcd server under a leading tenure run
// for twice the TTL, and start it again: the command (one that SIGTERM
// ends) is stopped, and the same tenure process leads again and runs it
// again, with a greater token, without being restarted by hand.
func TestRunStaysCandidate(t *testing.T) {
	t.Parallel()
	etcd := etcdbin.New(t)
	out := filepath.Join(t.TempDir(), "starts")
	args := append(append([]string{"--endpoints", etcd.URL, "run", "--key", "loss"}, lossFlags...), "--")
	args = append(args, lossCommand(out)...)
	p := startProc(t, "leader", nil, args...)
	first := awaitStarts(t, p, out, 1, 15*time.Second)[0]

	etcd.Kill()
	time.Sleep(2 * lossTTL)
	if p.exited() {
		t.Fatalf("tenure exited with %d while the coordinator was down; want it to campaign again", p.code)
	}
	etcd.Restart(t)
	tokens := awaitStarts(t, p, out, 2, 3*lossTTL+slack)
	if tokens[1] <= first {
		t.Errorf("token after the coordinator came back = %d; want > %d", tokens[1], first)
	}
	if p.exited() {
		t.Errorf("tenure exited with %d; want it to run the command again", p.code)
	}
	log := p.err.String()
	for _, want := range []string{"campaigning again; a lease left at the coordinator expires on its own"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	t.Logf("tokens %v; log:\n%s", tokens, log)
}

// TestRunExitOnLoss: with --exit-on-loss, tenure run whose etcd server is
// stopped stops its command and exits 75 (ExitLost), not the command's
// 143 nor anything a signal gives.
func TestRunExitOnLoss(t *testing.T) {
	t.Parallel()
	etcd := etcdbin.New(t)
	out := filepath.Join(t.TempDir(), "starts")
	args := append(append([]string{"--endpoints", etcd.URL, "run", "--key", "loss"}, lossFlags...), "--exit-on-loss", "--")
	args = append(args, lossCommand(out)...)
	p := startProc(t, "leader", nil, args...)
	awaitStarts(t, p, out, 1, 15*time.Second)

	etcd.Kill()
	if code := p.wait(t, lossTTL+slack); code != ExitLost {
		t.Errorf("exit code = %d; want %d (leadership lost)\n%s", code, ExitLost, p.err)
	}
	if n := len(starts(t, out)); n != 1 {
		t.Errorf("command started %d times; want 1", n)
	}
	if !strings.Contains(p.err.String(), "exiting (--exit-on-loss)") {
		t.Errorf("stderr does not say why tenure exited:\n%s", p.err)
	}
}

// TestRunPartitionsStayCandidate: the same for a partition member: its
// etcd server stopped for twice the TTL and started again, the member (the
// same process) runs its partitions' commands again, with greater tokens;
// with --exit-on-loss, a member exits 75 instead.
func TestRunPartitionsStayCandidate(t *testing.T) {
	t.Parallel()
	etcd := etcdbin.New(t)
	out := filepath.Join(t.TempDir(), "starts")
	member := func(name string, extra ...string) *proc {
		args := append(append([]string{"--endpoints", etcd.URL, "run", "--key", name, "--partitions", "2"}, lossFlags...), extra...)
		return startProc(t, name, nil, append(append(args, "--"), lossCommand(out+"-"+name)...)...)
	}
	stays, exits := member("stays"), member("exits", "--exit-on-loss")
	first := awaitStarts(t, stays, out+"-stays", 2, 15*time.Second)
	awaitStarts(t, exits, out+"-exits", 2, 15*time.Second)

	etcd.Kill()
	if code := exits.wait(t, lossTTL+slack); code != ExitLost {
		t.Errorf("member with --exit-on-loss: exit %d; want %d\n%s", code, ExitLost, exits.err)
	}
	time.Sleep(2 * lossTTL)
	if stays.exited() {
		t.Fatalf("member exited with %d while the coordinator was down; want it to stay a candidate", stays.code)
	}
	etcd.Restart(t)
	tokens := awaitStarts(t, stays, out+"-stays", 4, 3*lossTTL+slack)
	for _, tok := range tokens[2:] {
		if tok <= max(first[0], first[1]) {
			t.Errorf("token after the coordinator came back = %d; want > %v", tok, first)
		}
	}
}
