package term

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/etcdbin"
)

// TestRunStaysCandidate: stop the etcd server under a leading tenure run
// for twice the TTL, and start it again: the command (one that SIGTERM
// ends) is stopped, and the same tenure process leads again and runs it
// again, with a greater token, without being restarted by hand.
func TestRunStaysCandidate(t *testing.T) {
	t.Parallel()
	etcd := etcdbin.New(t)
	out := filepath.Join(t.TempDir(), "starts")
	args := append(append([]string{"--endpoints", etcd.URL, "run", "--key", "loss"}, e2e.LossFlags...), "--")
	args = append(args, e2e.LossCommand(out)...)
	p := e2e.StartProc(t, "leader", nil, args...)
	first := e2e.AwaitStarts(t, p, out, 1, 15*time.Second)[0]

	etcd.Kill()
	time.Sleep(2 * e2e.LossTTL)
	if p.Exited() {
		t.Fatalf("tenure exited with %d while the coordinator was down; want it to campaign again", p.Code)
	}
	etcd.Restart(t)
	tokens := e2e.AwaitStarts(t, p, out, 2, 3*e2e.LossTTL+e2e.Slack)
	if tokens[1] <= first {
		t.Errorf("token after the coordinator came back = %d; want > %d", tokens[1], first)
	}
	if p.Exited() {
		t.Errorf("tenure exited with %d; want it to run the command again", p.Code)
	}
	log := p.Err.String()
	for _, want := range []string{"campaigning again; a lease left at the coordinator expires on its own"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	t.Logf("tokens %v; log:\n%s", tokens, log)
}

// TestRunExitOnLoss: with --exit-on-loss, tenure run whose etcd server is
// stopped stops its command and exits 75 (cli.ExitLost), not the command's
// 143 nor anything a signal gives.
func TestRunExitOnLoss(t *testing.T) {
	t.Parallel()
	etcd := etcdbin.New(t)
	out := filepath.Join(t.TempDir(), "starts")
	args := append(append([]string{"--endpoints", etcd.URL, "run", "--key", "loss"}, e2e.LossFlags...), "--exit-on-loss", "--")
	args = append(args, e2e.LossCommand(out)...)
	p := e2e.StartProc(t, "leader", nil, args...)
	e2e.AwaitStarts(t, p, out, 1, 15*time.Second)

	etcd.Kill()
	if code := p.Wait(t, e2e.LossTTL+e2e.Slack); code != cli.ExitLost {
		t.Errorf("exit code = %d; want %d (leadership lost)\n%s", code, cli.ExitLost, p.Err)
	}
	if n := len(e2e.Starts(t, out)); n != 1 {
		t.Errorf("command started %d times; want 1", n)
	}
	if !strings.Contains(p.Err.String(), "exiting (--exit-on-loss)") {
		t.Errorf("stderr does not say why tenure exited:\n%s", p.Err)
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
	member := func(name string, extra ...string) *e2e.Proc {
		args := append(append([]string{"--endpoints", etcd.URL, "run", "--key", name, "--partitions", "2"}, e2e.LossFlags...), extra...)
		return e2e.StartProc(t, name, nil, append(append(args, "--"), e2e.LossCommand(out+"-"+name)...)...)
	}
	stays, exits := member("stays"), member("exits", "--exit-on-loss")
	first := e2e.AwaitStarts(t, stays, out+"-stays", 2, 15*time.Second)
	e2e.AwaitStarts(t, exits, out+"-exits", 2, 15*time.Second)

	etcd.Kill()
	if code := exits.Wait(t, e2e.LossTTL+e2e.Slack); code != cli.ExitLost {
		t.Errorf("member with --exit-on-loss: exit %d; want %d\n%s", code, cli.ExitLost, exits.Err)
	}
	time.Sleep(2 * e2e.LossTTL)
	if stays.Exited() {
		t.Fatalf("member exited with %d while the coordinator was down; want it to stay a candidate", stays.Code)
	}
	etcd.Restart(t)
	tokens := e2e.AwaitStarts(t, stays, out+"-stays", 4, 3*e2e.LossTTL+e2e.Slack)
	for _, tok := range tokens[2:] {
		if tok <= max(first[0], first[1]) {
			t.Errorf("token after the coordinator came back = %d; want > %v", tok, first)
		}
	}
}
