package kube_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/termcheck"
	"github.com/tenure-dev/tenure/partition"

	"k8s.io/client-go/kubernetes"

	"github.com/tenure-dev/tenure/internal/kubetest"

	"github.com/tenure-dev/tenure"
)

// TestRunnerStaleReads runs two members of a 4-partition group: a on a
// client whose transport answers 30% of its reads with an older reply
// (staleReads: a cache behind the API server), b on a plain one. Eight
// times, b joins, takes its share and leaves, and a claims b's partitions:
// decided on listings that may be stale, where a partition may read as a's
// own (claimed again, with a new token, without asking whether its owner
// lives) or as b's, b's membership as live or gone. termcheck judges every
// act (a Term.Check that passed) of every term: the test fails when a term
// passes Check after another term of its partition with a greater token
// did, or while another running term of it passes Check (two holders
// acting at once), or when a token is run twice or by two members. It
// passed when written: kept as a regression test.
func TestRunnerStaleReads(t *testing.T) {
	t.Parallel()
	s, cs := shared(t)
	ns := newNamespace(t, cs)
	cfg := s.Config(kubetest.Admin)
	cfg.ContentType = "application/json"
	tr := &staleReads{rng: rand.New(rand.NewPCG(9, 9)), seen: map[string][]recorded{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { tr.rt = rt; return tr })
	stale, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := termcheck.New()
	fn := func(who string) partition.Func {
		return func(ctx context.Context, p partition.Partition, term *tenure.Term) error {
			defer l.Run(p.Key, who, term)()
			for ctx.Err() == nil {
				l.Act(p.Key, who, term)
				time.Sleep(5 * time.Millisecond)
			}
			return nil
		}
	}
	logs := &lockedBuffer{}
	run, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	member := func(ctx context.Context, who, instance string, cl kubernetes.Interface) {
		gcfg := partition.DefaultConfig()
		gcfg.Key, gcfg.Partitions, gcfg.Holder, gcfg.Instance = "jobs", 4, who, instance
		gcfg.TTL, gcfg.Margin = 3*time.Second, 200*time.Millisecond
		gcfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		g, err := partition.New(newCoordinator(t, cl, ns), gcfg)
		if err != nil {
			t.Error(err)
			return
		}
		wg.Go(func() { _ = g.Run(ctx, fn(who)) })
	}
	member(run, "a", "1", stale)
	for cycle := range 8 {
		// b joins, takes its share, and leaves: a claims b's partitions
		// while its link misbehaves.
		bctx, bstop := context.WithCancel(run)
		member(bctx, "b", fmt.Sprint(cycle), cs)
		time.Sleep(1500 * time.Millisecond)
		bstop()
		time.Sleep(1500 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // healed: let the group settle
	stop()
	wg.Wait()
	l.Verify(t)
	terms, total := l.Terms(""), l.Acts()
	logs.mu.Lock()
	doubtful := strings.Count(logs.b.String(), "claiming these partitions again")
	logs.mu.Unlock()
	t.Logf("%d terms, %d acts over 4 partitions, %d claims with an outcome unknown (claimed again); %d reads served stale", terms, total, doubtful, tr.served())
	if terms <= 4 {
		t.Errorf("only %d terms: the faults moved no partition, the test tested little", terms)
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
