package postgres_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/postgres"
)

// attempt is one contender's result in one round.
type attempt struct {
	Round  int    `json:"round"`
	Holder string `json:"holder"`
	Token  uint64 `json:"token,omitempty"` // the grant's, when won
	// HeldBy and HeldToken are what a refusal named.
	HeldBy    string `json:"held_by,omitempty"`
	HeldToken uint64 `json:"held_token,omitempty"`
	Err       string `json:"err,omitempty"`
}

const contentionTTL = 10 * time.Second // far longer than a round

// contend runs one Acquire attempt by each holder at once.
func contend(ctx context.Context, c tenure.Coordinator, key string, round int, holders []string) []attempt {
	out := make([]attempt, len(holders))
	var wg sync.WaitGroup
	for i, h := range holders {
		wg.Go(func() {
			a := attempt{Round: round, Holder: h}
			g, err := c.Acquire(ctx, key, h, contentionTTL)
			var he *tenure.HeldError
			switch {
			case err == nil:
				a.Token = g.Token
			case errors.As(err, &he):
				a.HeldBy, a.HeldToken = he.Holder, he.Token
			default:
				a.Err = err.Error()
			}
			out[i] = a
		})
	}
	wg.Wait()
	return out
}

// runChild is a contender process: for each round number read from stdin it
// makes one attempt per goroutine and writes the attempts as JSON lines.
func runChild() int {
	ctx := context.Background()
	c, err := postgres.Dial(ctx, os.Getenv("TENURE_TEST_CHILD_DSN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	key := os.Getenv("TENURE_TEST_CHILD_KEY")
	n, _ := strconv.Atoi(os.Getenv("TENURE_TEST_CHILD_GOROUTINES"))
	enc := json.NewEncoder(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		round, err := strconv.Atoi(in.Text())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		holders := make([]string, n)
		for i := range holders {
			holders[i] = fmt.Sprintf("proc%d-g%d", os.Getpid(), i)
		}
		for _, a := range contend(ctx, c, key, round, holders) {
			if err := enc.Encode(a); err != nil {
				return 1
			}
		}
	}
	return 0
}

// child is a contender process started by the test.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *json.Decoder
}

func startChild(t *testing.T, dsn, key string, goroutines int) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1",
		"TENURE_TEST_CHILD_DSN="+dsn, "TENURE_TEST_CHILD_KEY="+key,
		"TENURE_TEST_CHILD_GOROUTINES="+strconv.Itoa(goroutines))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("contender process: %v", err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("contender process did not exit")
		}
	})
	return &child{cmd: cmd, in: in, out: json.NewDecoder(out)}
}

// TestContention races goroutines of this process and of several contender
// processes, each with its own pool, for a free key, round after round:
// exactly one wins each round, every other attempt is refused naming the
// winner, and tokens strictly increase.
func TestContention(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	const (
		rounds     = 12
		processes  = 3
		perProcess = 4
		local      = 8
	)
	key := "contention/resource"
	c := open(t, dsn)
	ctx := ctxFor(t, 2*time.Minute)
	children := make([]*child, processes)
	for i := range children {
		children[i] = startChild(t, dsn, key, perProcess)
	}
	holders := make([]string, local)
	for i := range holders {
		holders[i] = fmt.Sprintf("local-g%d", i)
	}
	var last uint64
	for round := 1; round <= rounds; round++ {
		var all []attempt
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, ch := range children {
			if _, err := fmt.Fprintln(ch.in, round); err != nil {
				t.Fatal(err)
			}
		}
		wg.Go(func() {
			as := contend(ctx, c, key, round, holders)
			mu.Lock()
			all = append(all, as...)
			mu.Unlock()
		})
		for _, ch := range children {
			for range perProcess {
				var a attempt
				if err := ch.out.Decode(&a); err != nil {
					t.Fatalf("round %d: read a contender's result: %v", round, err)
				}
				mu.Lock()
				all = append(all, a)
				mu.Unlock()
			}
		}
		wg.Wait()

		var winners []attempt
		for _, a := range all {
			if a.Round != round {
				t.Fatalf("round %d: got a result for round %d", round, a.Round)
			}
			if a.Err != "" {
				t.Errorf("round %d: %s: Acquire error = %s; want a grant or a HeldError", round, a.Holder, a.Err)
			}
			if a.Token != 0 {
				winners = append(winners, a)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d winners %+v; want exactly 1", round, len(winners), winners)
		}
		w := winners[0]
		if w.Token <= last {
			t.Fatalf("round %d: token = %d; want > %d (the previous round's)", round, w.Token, last)
		}
		last = w.Token
		for _, a := range all {
			if a.Token == 0 && a.Err == "" && (a.HeldBy != w.Holder || a.HeldToken != w.Token) {
				t.Errorf("round %d: %s refused naming %q token %d; want the winner %q token %d", round, a.Holder, a.HeldBy, a.HeldToken, w.Holder, w.Token)
			}
		}
		if got, want := len(all), local+processes*perProcess; got != want {
			t.Fatalf("round %d: %d attempts; want %d", round, got, want)
		}
		// Free the key for the next round, as the winner would.
		if err := c.Release(ctx, tenure.Grant{Key: key, Holder: w.Holder, Token: w.Token, TTL: contentionTTL}); err != nil {
			t.Fatalf("round %d: Release(winner) error = %v", round, err)
		}
		if g, ok, err := c.Leader(ctx, key); err != nil || ok {
			t.Fatalf("round %d: after release Leader() = %v, %v, %v; want free", round, g, ok, err)
		}
	}
}

// TestConcurrentCreate starts many coordinators on a fresh database at once:
// creating the leadership table is safe under concurrency.
func TestConcurrentCreate(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := postgres.Dial(ctx, dsn, postgres.WithSchema("public"))
			if err == nil {
				_, err = c.Acquire(ctx, "k", fmt.Sprintf("h%d", i), time.Second)
				var he *tenure.HeldError
				if errors.As(err, &he) {
					err = nil
				}
				c.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("coordinator %d: %v", i, err)
		}
	}
}
