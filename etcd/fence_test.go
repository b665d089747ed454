package etcd_test

import (
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/fence"
)

// wantStale checks that err is a *fence.StaleError with the given tokens
// (required 0: any token greater than presented).
func wantStale(t *testing.T, err error, presented, required uint64) {
	t.Helper()
	var se *fence.StaleError
	if !errors.As(err, &se) {
		t.Fatalf("error = %v; want a *fence.StaleError", err)
	}
	if !errors.Is(err, tenure.ErrStaleToken) {
		t.Errorf("error = %v; want it to match tenure.ErrStaleToken", err)
	}
	if se.Presented != presented {
		t.Errorf("StaleError.Presented = %d; want %d", se.Presented, presented)
	}
	if required != 0 && se.Required != required || se.Required <= presented {
		t.Errorf("StaleError.Required = %d; want %d (> presented %d)", se.Required, required, presented)
	}
}

// value returns the value of etcd key k, "" if it does not exist.
func value(t *testing.T, cl *clientv3.Client, k string) string {
	t.Helper()
	resp, err := cl.Get(ctx(t), k)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

func TestFencedTxnRejectsAfterExpiry(t *testing.T) {
	t.Parallel() // it mostly waits for leases to expire
	eps := startEtcd(t)
	// Two nodes, each with its own connection.
	a := newCoordinator(t, newClient(t, eps))
	b := newCoordinator(t, newClient(t, eps))
	cl := newClient(t, eps)

	ga := mustAcquire(t, a, "fenced/job", "alice", time.Second)
	if _, err := a.FencedTxn(ctx(t), ga, clientv3.OpPut("data/x", "alice-1")); err != nil {
		t.Fatalf("FencedTxn by the live leader: %v", err)
	}

	// Alice is cut off: she stops renewing. Bob takes over after expiry.
	var gb tenure.Grant
	deadline := time.Now().Add(ga.TTL + 5*time.Second)
	for {
		g, err := b.Acquire(ctx(t), "fenced/job", "bob", time.Second)
		if err == nil {
			gb = g
			break
		}
		if !errors.Is(err, tenure.ErrHeld) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("alice's lease did not expire")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Alice, resumed, still tries to write: nothing she writes is visible.
	_, err := a.FencedTxn(ctx(t), ga, clientv3.OpPut("data/x", "alice-2"), clientv3.OpPut("data/y", "alice-2"))
	wantStale(t, err, ga.Token, gb.Token)
	if got := value(t, cl, "data/x"); got != "alice-1" {
		t.Errorf("data/x = %q after alice's fenced write was rejected; want %q", got, "alice-1")
	}
	if got := value(t, cl, "data/y"); got != "" {
		t.Errorf("data/y = %q; want it absent (alice's rejected write must change nothing)", got)
	}
	if _, err := b.FencedTxn(ctx(t), gb, clientv3.OpPut("data/x", "bob-1")); err != nil {
		t.Fatalf("FencedTxn by the new leader: %v", err)
	}
	if got := value(t, cl, "data/x"); got != "bob-1" {
		t.Errorf("data/x = %q; want %q", got, "bob-1")
	}

	// Superseded by the same holder, and released: stale too.
	gb2 := mustAcquire(t, b, "fenced/job", "bob", time.Second)
	_, err = b.FencedTxn(ctx(t), gb, clientv3.OpPut("data/x", "bob-old"))
	wantStale(t, err, gb.Token, gb2.Token)
	if err := b.Release(ctx(t), gb2); err != nil {
		t.Fatal(err)
	}
	_, err = b.FencedTxn(ctx(t), gb2, clientv3.OpPut("data/x", "bob-released"))
	wantStale(t, err, gb2.Token, 0)
	if got := value(t, cl, "data/x"); got != "bob-1" {
		t.Errorf("data/x = %q; want %q (stale writes change nothing)", got, "bob-1")
	}

	// Grants that were never made are refused.
	forged := tenure.Grant{Key: "fenced/job", Holder: "mallory", Token: 0}
	if _, err := a.FencedTxn(ctx(t), forged, clientv3.OpPut("data/x", "m")); !errors.Is(err, tenure.ErrInvalidGrant) {
		t.Errorf("FencedTxn with token 0 = %v; want ErrInvalidGrant", err)
	}
	gc := mustAcquire(t, a, "fenced/job", "carol", time.Second)
	forged = tenure.Grant{Key: "fenced/job", Holder: "carol", Token: gc.Token + 100}
	if _, err := a.FencedTxn(ctx(t), forged, clientv3.OpPut("data/x", "m")); !errors.Is(err, tenure.ErrInvalidGrant) {
		t.Errorf("FencedTxn with a token never granted = %v; want ErrInvalidGrant", err)
	}
	forged = tenure.Grant{Key: "fenced/job", Holder: "mallory", Token: gc.Token}
	if _, err := a.FencedTxn(ctx(t), forged, clientv3.OpPut("data/x", "m")); err == nil {
		t.Errorf("FencedTxn with another holder's token succeeded")
	}
	if got := value(t, cl, "data/x"); got != "bob-1" {
		t.Errorf("data/x = %q; want %q (refused writes change nothing)", got, "bob-1")
	}
}

func TestRegister(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	cl := newClient(t, eps)
	r := etcd.NewRegister(cl, "resources/orders/token")

	if tok, err := r.Token(ctx(t)); err != nil || tok != 0 {
		t.Fatalf("Token() of a new register = %d, %v; want 0, nil", tok, err)
	}
	write := func(token uint64, v string) error {
		resp, err := r.Write(ctx(t), token, clientv3.OpPut("resources/orders", v))
		if err == nil && (len(resp.Responses) != 2 || resp.Responses[1].GetResponsePut() == nil) {
			t.Errorf("Write(%d) responses = %v; want the token put, then the op's put", token, resp.Responses)
		}
		return err
	}
	steps := []struct {
		token uint64
		value string
		stale uint64 // required token when rejected as stale
	}{
		{5, "v5", 0},
		{7, "v7", 0},
		{6, "v6", 7},  // lower: rejected
		{7, "v7b", 0}, // equal: the same term writing again
		{10, "v10", 0},
		{9, "v9", 10},
		{1, "v1", 10},
	}
	want := ""
	for _, s := range steps {
		err := write(s.token, s.value)
		if s.stale == 0 {
			if err != nil {
				t.Fatalf("Write(%d) = %v; want accepted", s.token, err)
			}
			want = s.value
		} else {
			wantStale(t, err, s.token, s.stale)
		}
		if got := value(t, cl, "resources/orders"); got != want {
			t.Fatalf("after Write(%d): resource = %q; want %q", s.token, got, want)
		}
	}
	if tok, err := r.Token(ctx(t)); err != nil || tok != 10 {
		t.Errorf("Token() = %d, %v; want 10", tok, err)
	}
	if err := write(0, "v0"); !errors.Is(err, fence.ErrMissingToken) {
		t.Errorf("Write(0) = %v; want ErrMissingToken", err)
	}
	// Tokens compare as numbers, not as text: 10 > 9, 1<<63 > 10.
	if err := write(1<<63, "big"); err != nil {
		t.Errorf("Write(1<<63) = %v", err)
	}
	if err := write(1<<62, "smaller"); err == nil {
		t.Errorf("Write(1<<62) after 1<<63 accepted")
	}

	// A corrupted token key is reported, and nothing is written.
	if _, err := cl.Put(ctx(t), "resources/orders/token", "garbage"); err != nil {
		t.Fatal(err)
	}
	if err := write(1<<63+1, "after-garbage"); err == nil || value(t, cl, "resources/orders") != "big" {
		t.Errorf("Write over a corrupted token key = %v, resource %q; want an error and no change", err, value(t, cl, "resources/orders"))
	}
	if _, err := r.Token(ctx(t)); err == nil {
		t.Errorf("Token() of a corrupted register = nil error")
	}
}

func TestRegisterWithGrants(t *testing.T) {
	t.Parallel()
	// Successive leaders write through the register; the deposed one is
	// refused even while its write is "in flight" after the handover.
	eps := startEtcd(t)
	c := newCoordinator(t, newClient(t, eps))
	cl := newClient(t, eps)
	r := etcd.NewRegister(cl, "reg/token")

	g1 := mustAcquire(t, c, "reg/leader", "alice", 5*time.Second)
	if _, err := r.Write(ctx(t), g1.Token, clientv3.OpPut("reg/data", "alice")); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx(t), g1); err != nil {
		t.Fatal(err)
	}
	g2 := mustAcquire(t, c, "reg/leader", "bob", 5*time.Second)
	if _, err := r.Write(ctx(t), g2.Token, clientv3.OpPut("reg/data", "bob")); err != nil {
		t.Fatal(err)
	}
	_, err := r.Write(ctx(t), g1.Token, clientv3.OpPut("reg/data", "alice-late"))
	wantStale(t, err, g1.Token, g2.Token)
	if got := value(t, cl, "reg/data"); got != "bob" {
		t.Errorf("reg/data = %q; want %q", got, "bob")
	}
}
