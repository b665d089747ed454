package term

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/etcdbin"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
)

// End-to-end tests of tenure run staying a candidate after a lost lease:
// each tries to make two copies of the command act at once (the
// old term's tree, or a process it left in its own session, still alive
// when the next term's command starts, in the same tenure process or in
// another), or a write with an older token accepted after a newer one.

// recampaignScript is the command of these tests. Its scope S is its
// partition ("key" for one key). At start it records, in $PIDS.overlap, any process an
// earlier start of S recorded that is still alive; it then leaves the
// fenced-register writer ($SELF in "fence" mode, which ignores SIGTERM) in
// a session of its own, records both pids in $PIDS ("S TOKEN PID"), and
// exits 0 at the first SIGTERM (the guard's for an overdue renewal), after
// writing "term S TOKEN" to $PIDS.ev.
const recampaignScript = `S=${TENURE_PARTITION:-key}
if [ -f "$PIDS" ]; then while read s tok p; do
  if [ "$s" = "$S" ] && [ -r /proc/$p/stat ] && ! grep -q ') Z' /proc/$p/stat 2>/dev/null; then
    echo "$S: token $tok pid $p alive as token $TENURE_FENCING_TOKEN starts" >>"$PIDS.overlap"
  fi
done <"$PIDS"; fi
setsid "$SELF" </dev/null & echo "$S $TENURE_FENCING_TOKEN $!" >>"$PIDS"
echo "$S $TENURE_FENCING_TOKEN $$" >>"$PIDS"
echo "start $TENURE_FENCING_TOKEN" >>"$OUT"
trap 'echo "term $S $TENURE_FENCING_TOKEN" >>"$PIDS.ev"; exit 0' TERM
while :; do sleep 0.05; done`

// recampaignFlags: a 5s TTL, SIGTERM for an overdue renewal 2s before the local
// deadline.
var recampaignFlags = e2e.LossFlags

// overlapWatch polls a $PIDS file every 5ms and records each moment at which
// live processes of one scope carry two different tokens.
type overlapWatch struct {
	pids string
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	seen []string
}

func watchOverlap(t *testing.T, pids string) *overlapWatch {
	w := &overlapWatch{pids: pids, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			w.poll()
		}
	}()
	t.Cleanup(w.halt)
	return w
}

func (w *overlapWatch) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

func (w *overlapWatch) poll() {
	b, err := os.ReadFile(w.pids)
	if err != nil {
		return
	}
	live := map[string]map[string][]string{} // scope → token → pids
	for _, l := range e2e.Lines(string(b)) {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(f[2], &pid); err != nil || !e2e.Alive(pid) {
			continue
		}
		if live[f[0]] == nil {
			live[f[0]] = map[string][]string{}
		}
		live[f[0]][f[1]] = append(live[f[0]][f[1]], f[2])
	}
	for scope, toks := range live {
		if len(toks) > 1 {
			w.mu.Lock()
			if len(w.seen) < 20 {
				w.seen = append(w.seen, fmt.Sprintf("%s %s: live by token (pids) %v", time.Now().Format("15:04:05.000"), scope, toks))
			}
			w.mu.Unlock()
		}
	}
}

// check stops the watch and fails t if two tokens of a scope were ever alive
// at once, or the command saw an earlier one alive when it started.
func (w *overlapWatch) check(t *testing.T) {
	t.Helper()
	w.halt()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.seen) > 0 {
		t.Errorf("two terms' processes alive at once:\n%s", strings.Join(w.seen, "\n"))
	}
	b, _ := os.ReadFile(w.pids)
	terms := map[string]bool{}
	for _, l := range e2e.Lines(string(b)) {
		if f := strings.Fields(l); len(f) == 3 {
			terms[f[0]+" "+f[1]] = true
		}
	}
	if len(terms) < 2 {
		t.Errorf("the watch saw %d terms' processes in %s; want at least 2 (nothing was tested)", len(terms), w.pids)
	}
	if b, err := os.ReadFile(w.pids + ".overlap"); err == nil {
		t.Errorf("a command started while an earlier term's process lived:\n%s", b)
	}
}

// rejected is the register's rejected writes, as "token N (value)".
func rejected(r *e2e.Resource) []string {
	var out []string
	for _, d := range r.Reg.Decisions() {
		if !d.Accepted {
			out = append(out, fmt.Sprintf("token %d (%s)", d.Token, d.Value))
		}
	}
	return out
}

// awaitFile waits up to d for file to contain want.
func awaitFile(t *testing.T, file, want string, d time.Duration) {
	t.Helper()
	for began := time.Now(); time.Since(began) < d; time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile(file); strings.Contains(string(b), want) {
			return
		}
	}
	t.Fatalf("%s lacks %q after %s", file, want, d)
}

// proxiedEtcd starts Debian's etcd and a cuttable proxy to it.
func proxiedEtcd(t *testing.T) (direct, proxied []string, p *tcpproxy.Proxy) {
	etcd := etcdbin.New(t)
	u, _ := url.Parse(etcd.URL)
	p = e2e.NewProxy(t, u.Host)
	return []string{"--endpoints", etcd.URL}, []string{"--endpoints", "http://" + p.Addr()}, p
}

// TestRecampaignHealAtOverdue: the coordinator's link is cut under a
// leader whose command leaves a SIGTERM-ignoring writer in its own session
// and exits 0 at the overdue SIGTERM; the link comes back at that SIGTERM,
// or 1.5s later (0.5s before the local deadline), so the re-campaign wins
// at once (the term stepped down and released). With and without
// --restart. The next command must not start while the writer lives, and
// no write of the old token may be rejected (it never writes after the new
// one did).
func TestRecampaignHealAtOverdue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		heal  time.Duration
		extra []string
	}{
		{"heal at SIGTERM", 0, nil},
		{"heal before deadline", 1500 * time.Millisecond, nil},
		{"restart, heal at SIGTERM", 0, []string{"--restart"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, proxied, p := proxiedEtcd(t)
			r := e2e.StartResource(t)
			pids := filepath.Join(t.TempDir(), "pids")
			w := watchOverlap(t, pids)
			s := e2e.StartSupervised(t, proxied, "recampaign", append(r.Env(), "PIDS="+pids), recampaignScript,
				append(append([]string{}, recampaignFlags...), tc.extra...)...)
			first := e2e.AwaitStarts(t, s.Proc, s.Out, 1, 20*time.Second)[0]
			r.First(t, 10*time.Second, "by the first term", func(wr e2e.Write) bool { return wr.Token == first })

			p.Cut()
			awaitFile(t, pids+".ev", fmt.Sprintf("term key %d", first), e2e.LossTTL+e2e.Slack)
			time.Sleep(tc.heal)
			p.Heal()
			tokens := e2e.AwaitStarts(t, s.Proc, s.Out, 2, 3*e2e.LossTTL+e2e.Slack)
			r.First(t, 10*time.Second, "by the second term", func(wr e2e.Write) bool { return wr.Token == tokens[1] })
			time.Sleep(time.Second)
			if tokens[1] <= first {
				t.Errorf("second token %d; want > %d", tokens[1], first)
			}
			if s.Exited() {
				t.Errorf("tenure exited %d; want it to stay a candidate", s.Code)
			}
			w.check(t)
			if rj := rejected(r); len(rj) > 0 {
				t.Errorf("rejected writes (an old term wrote after a new one): %v", rj)
			}
			t.Logf("tokens %v", tokens)
		})
	}
}

// TestRecampaignTwoProcesses: A leads through a proxy, B waits on the
// same key directly. A's link is cut: B takes over; A's link heals, A
// campaigns again behind B; B's tenure is then SIGKILLed (its guard alone
// kills its tree) and A leads again. At no moment may two terms' processes
// (commands or the writers they left in their own sessions) live at once,
// and no write may be rejected. Also with a --kill-grace longer than the
// TTL.
func TestRecampaignTwoProcesses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"ttl 5s grace 2s", recampaignFlags},
		{"ttl 3s grace 10s", []string{"--ttl", "3s", "--kill-grace", "10s"}}, // the grace does not fit the TTL
	} {
		t.Run(tc.name, func(t *testing.T) { twoProcesses(t, tc.flags) })
	}
}

func twoProcesses(t *testing.T, flags []string) {
	direct, proxied, p := proxiedEtcd(t)
	r := e2e.StartResource(t)
	pids := filepath.Join(t.TempDir(), "pids")
	w := watchOverlap(t, pids)
	env := append(r.Env(), "PIDS="+pids)
	a := e2e.StartSupervised(t, proxied, "recampaign2", env, recampaignScript, append(append([]string{}, flags...), "--holder", "a")...)
	first := e2e.AwaitStarts(t, a.Proc, a.Out, 1, 20*time.Second)[0]
	b := e2e.StartSupervised(t, direct, "recampaign2", env, recampaignScript, append(append([]string{}, flags...), "--holder", "b")...)

	p.Cut()
	bTok := e2e.AwaitStarts(t, b.Proc, b.Out, 1, 3*e2e.LossTTL+e2e.Slack)[0]
	p.Heal()
	time.Sleep(2 * time.Second)
	if a.Exited() {
		t.Fatalf("A exited %d after losing; want it to campaign again", a.Code)
	}
	b.Signal(t, syscall.SIGKILL)
	tokens := e2e.AwaitStarts(t, a.Proc, a.Out, 2, 3*e2e.LossTTL+e2e.Slack)
	r.First(t, 10*time.Second, "by A's second term", func(wr e2e.Write) bool { return wr.Token == tokens[1] })
	time.Sleep(time.Second)
	if !(first < bTok && bTok < tokens[1]) {
		t.Errorf("tokens A %d, B %d, A %d; want increasing", first, bTok, tokens[1])
	}
	w.check(t)
	if rj := rejected(r); len(rj) > 0 {
		t.Errorf("rejected writes (an old term wrote after a new one): %v", rj)
	}
}

// TestRecampaignStoppedTenure: A's tenure process (not its guard) is
// SIGSTOPped across its local deadline while B waits on the same key; B
// takes over; A is continued and campaigns again behind B; B is stopped
// with SIGTERM (it releases) and A leads again. No two terms' processes at
// once, no rejected write.
func TestRecampaignStoppedTenure(t *testing.T) {
	direct, _, _ := proxiedEtcd(t)
	r := e2e.StartResource(t)
	pids := filepath.Join(t.TempDir(), "pids")
	w := watchOverlap(t, pids)
	env := append(r.Env(), "PIDS="+pids)
	a := e2e.StartSupervised(t, direct, "recampaign3", env, recampaignScript, append(append([]string{}, recampaignFlags...), "--holder", "a")...)
	first := e2e.AwaitStarts(t, a.Proc, a.Out, 1, 20*time.Second)[0]
	b := e2e.StartSupervised(t, direct, "recampaign3", env, recampaignScript, append(append([]string{}, recampaignFlags...), "--holder", "b")...)

	a.Signal(t, syscall.SIGSTOP)
	bTok := e2e.AwaitStarts(t, b.Proc, b.Out, 1, 3*e2e.LossTTL+e2e.Slack)[0]
	time.Sleep(time.Second)
	a.Signal(t, syscall.SIGCONT)
	time.Sleep(2 * time.Second)
	if a.Exited() {
		t.Fatalf("A exited %d after being continued; want it to campaign again", a.Code)
	}
	b.Signal(t, syscall.SIGTERM)
	tokens := e2e.AwaitStarts(t, a.Proc, a.Out, 2, 3*e2e.LossTTL+e2e.Slack)
	r.First(t, 10*time.Second, "by A's second term", func(wr e2e.Write) bool { return wr.Token == tokens[1] })
	time.Sleep(time.Second)
	if !(first < bTok && bTok < tokens[1]) {
		t.Errorf("tokens A %d, B %d, A %d; want increasing", first, bTok, tokens[1])
	}
	w.check(t)
	if rj := rejected(r); len(rj) > 0 {
		t.Errorf("rejected writes (an old term wrote after a new one): %v", rj)
	}
}

// TestRecampaignPartitions: two members of a 2-partition group, one
// through a proxy. Its link is cut until its command's overdue SIGTERM
// and healed at once: the member steps down and campaigns again while the
// other member may claim the partition. Per partition, no two terms'
// processes may live at once.
func TestRecampaignPartitions(t *testing.T) {
	direct, proxied, p := proxiedEtcd(t)
	r := e2e.StartResource(t) // writes of the two partitions share it: rejections are not checked
	pids := filepath.Join(t.TempDir(), "pids")
	w := watchOverlap(t, pids)
	env := append(r.Env(), "PIDS="+pids)
	flags := append(append([]string{}, recampaignFlags...), "--partitions", "2")
	m1 := e2e.StartSupervised(t, proxied, "recampaignp", env, recampaignScript, append(flags, "--holder", "m1")...)
	e2e.AwaitStarts(t, m1.Proc, m1.Out, 2, 20*time.Second) // alone, it claims both
	m2 := e2e.StartSupervised(t, direct, "recampaignp", env, recampaignScript, append(flags, "--holder", "m2")...)
	e2e.AwaitStarts(t, m2.Proc, m2.Out, 1, 20*time.Second) // m2 takes one partition over (m1's command gets SIGTERM: a "term" line)
	time.Sleep(time.Second)

	before := len(e2e.Starts(t, m1.Out)) + len(e2e.Starts(t, m2.Out))
	ev := func() int { b, _ := os.ReadFile(pids + ".ev"); return len(e2e.Lines(string(b))) }
	handed := ev()
	p.Cut()
	for began := time.Now(); ev() == handed; time.Sleep(5 * time.Millisecond) {
		if time.Since(began) > e2e.LossTTL+e2e.Slack {
			t.Fatalf("no overdue SIGTERM within %s of the cut", e2e.LossTTL+e2e.Slack)
		}
	}
	p.Heal()
	total := func() int { return len(e2e.Starts(t, m1.Out)) + len(e2e.Starts(t, m2.Out)) }
	for began := time.Now(); total() <= before && time.Since(began) < 3*e2e.LossTTL+e2e.Slack; time.Sleep(20 * time.Millisecond) {
	}
	time.Sleep(2 * time.Second)
	if m1.Exited() || m2.Exited() {
		t.Errorf("a member exited (m1 %v %d, m2 %v %d); want both candidates", m1.Exited(), m1.Code, m2.Exited(), m2.Code)
	}
	// The term ends at the overdue SIGTERM's exit, or (the writer left in
	// its own session ignores SIGTERM) at the local deadline: the guard
	// kills it all, or tenure's own timer for the same deadline fires first
	// and stops it (when no renewal got through after the heal).
	if log := m1.Err.String(); !strings.Contains(log, "the command ended after the SIGTERM for an overdue renewal") &&
		!strings.Contains(log, "the guard killed the command at the local deadline") &&
		!strings.Contains(log, "reached its local deadline") {
		t.Errorf("m1 did not lose its partition at the overdue SIGTERM (nothing was tested):\n%s", m1.Err)
	}
	if total() <= before {
		t.Errorf("no partition command started again after the loss (starts m1 %v, m2 %v)", e2e.Starts(t, m1.Out), e2e.Starts(t, m2.Out))
	}
	t.Logf("starts m1 %v m2 %v", e2e.Starts(t, m1.Out), e2e.Starts(t, m2.Out))
	w.check(t)
}

// TestOverlapWatchSees: the overlap watch of these tests can fail: two
// live processes (this test and its parent) recorded under two tokens of
// one scope are seen.
func TestOverlapWatchSees(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	body := fmt.Sprintf("key 1 %d\nkey 2 %d\nother 3 %d\n", os.Getpid(), os.Getppid(), os.Getpid())
	if err := os.WriteFile(pids, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &overlapWatch{pids: pids}
	w.poll()
	if len(w.seen) != 1 || !strings.Contains(w.seen[0], "key:") {
		t.Errorf("seen %q; want one overlap, of scope key", w.seen)
	}
}

// TestRecampaignPartitionsStopped: the member holding a partition is
// SIGSTOPped (tenure only, not its guards) for twice the TTL while the other
// member claims what it held, then continued: it campaigns again. Per
// partition, no two terms' processes alive at once; both members stay.
func TestRecampaignPartitionsStopped(t *testing.T) {
	direct, _, _ := proxiedEtcd(t)
	r := e2e.StartResource(t) // shared by both partitions: rejections are not checked
	pids := filepath.Join(t.TempDir(), "pids")
	w := watchOverlap(t, pids)
	env := append(r.Env(), "PIDS="+pids)
	flags := append(append([]string{}, recampaignFlags...), "--partitions", "2")
	m1 := e2e.StartSupervised(t, direct, "recampaignps", env, recampaignScript, append(flags, "--holder", "m1")...)
	e2e.AwaitStarts(t, m1.Proc, m1.Out, 2, 20*time.Second)
	m2 := e2e.StartSupervised(t, direct, "recampaignps", env, recampaignScript, append(flags, "--holder", "m2")...)
	time.Sleep(3 * time.Second)

	before := len(e2e.Starts(t, m2.Out))
	m1.Signal(t, syscall.SIGSTOP)
	for began := time.Now(); len(e2e.Starts(t, m2.Out)) == before; time.Sleep(20 * time.Millisecond) {
		if time.Since(began) > 3*e2e.LossTTL+e2e.Slack {
			m1.Signal(t, syscall.SIGCONT)
			t.Fatalf("m2 claimed nothing of stopped m1 within %s", 3*e2e.LossTTL+e2e.Slack)
		}
	}
	time.Sleep(time.Second)
	m1.Signal(t, syscall.SIGCONT)
	time.Sleep(2 * e2e.LossTTL)
	if m1.Exited() || m2.Exited() {
		t.Errorf("a member exited (m1 %v %d, m2 %v %d); want both candidates", m1.Exited(), m1.Code, m2.Exited(), m2.Code)
	}
	t.Logf("starts m1 %v m2 %v", e2e.Starts(t, m1.Out), e2e.Starts(t, m2.Out))
	w.check(t)
}
