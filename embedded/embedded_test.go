package embedded_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/internal/leakcheck"
)

func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func client(t *testing.T, eps []string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// localConfig is a one-member configuration on free loopback ports.
func localConfig(t *testing.T) embedded.Config {
	t.Helper()
	urls, err := embedded.FreeLocalURLs(2)
	if err != nil {
		t.Fatal(err)
	}
	return embedded.Config{Dir: t.TempDir(), ClientURLs: urls[:1], PeerURLs: urls[1:]}
}

func start(t *testing.T, cfg embedded.Config) *embedded.Server {
	t.Helper()
	began := time.Now()
	s, err := embedded.Start(ctx(t), cfg)
	if err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	t.Logf("member %s ready in %s", s.Name(), time.Since(began))
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSingleMemberOnPortZero(t *testing.T) {
	cfg := localConfig(t)
	cfg.ClientURLs = []string{"http://127.0.0.1:0"}
	s := start(t, cfg)
	eps := s.Endpoints()
	if len(eps) != 1 || !strings.HasPrefix(eps[0], "http://127.0.0.1:") || strings.HasSuffix(eps[0], ":0") {
		t.Fatalf("Endpoints() = %v; want one http://127.0.0.1:<port> with the bound port", eps)
	}
	if !s.IsLeader() {
		t.Errorf("IsLeader() of a one-member cluster = false")
	}
	cl := client(t, eps)
	if _, err := cl.Put(ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	resp, err := cl.Get(ctx(t), "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("Get(k) = %v, %v; want v", resp, err)
	}
}

func TestRestartKeepsData(t *testing.T) {
	cfg := localConfig(t)
	s, err := embedded.Start(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cl := client(t, s.Endpoints())
	put, err := cl.Put(ctx(t), "durable", "yes")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	s2 := start(t, s.Config())
	resp, err := cl.Get(ctx(t), "durable") // the client reconnects to the same port
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "yes" || resp.Kvs[0].CreateRevision != put.Header.Revision {
		t.Fatalf("after restart Get(durable) = %v; want the value written before, at revision %d", resp.Kvs, put.Header.Revision)
	}
	again, err := cl.Put(ctx(t), "after", "restart")
	if err != nil {
		t.Fatal(err)
	}
	if again.Header.Revision <= put.Header.Revision {
		t.Errorf("revision after restart = %d; want > %d", again.Header.Revision, put.Header.Revision)
	}
	if s2.Dir() != cfg.Dir {
		t.Errorf("Dir() = %q; want %q", s2.Dir(), cfg.Dir)
	}
}

func startCluster(t *testing.T, n int) []*embedded.Server {
	t.Helper()
	cfgs, err := embedded.LocalCluster(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	servers := make([]*embedded.Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	began := time.Now()
	for i, cfg := range cfgs {
		wg.Go(func() { servers[i], errs[i] = embedded.Start(ctx(t), cfg) })
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, s := range servers {
			if s != nil {
				s.Close()
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d-member cluster ready in %s", n, time.Since(began))
	return servers
}

func TestThreeMemberCluster(t *testing.T) {
	servers := startCluster(t, 3)
	var eps []string
	var leader *embedded.Server
	for _, s := range servers {
		eps = append(eps, s.Endpoints()...)
		if s.IsLeader() {
			if leader != nil {
				t.Fatalf("two raft leaders: %s and %s", leader.Name(), s.Name())
			}
			leader = s
		}
	}
	// Written through one member, read (linearizably) through another.
	w := client(t, servers[0].Endpoints())
	r := client(t, servers[2].Endpoints())
	if _, err := w.Put(ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	if resp, err := r.Get(ctx(t), "k"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("Get through another member = %v, %v", resp, err)
	}
	members, err := w.MemberList(ctx(t))
	if err != nil || len(members.Members) != 3 {
		t.Fatalf("MemberList() = %v, %v; want 3 members", members, err)
	}

	// Without its leader the cluster elects another and keeps serving.
	if leader == nil {
		t.Fatal("no raft leader")
	}
	began := time.Now()
	leader.Close()
	t.Logf("stopped the leader %s in %s", leader.Name(), time.Since(began))
	all := client(t, eps)
	if _, err := all.Put(ctx(t), "k", "after"); err != nil {
		t.Fatalf("Put after the leader stopped: %v", err)
	}
}

func TestCloseWithOpenStreamsIsQuick(t *testing.T) {
	s := start(t, localConfig(t))
	cl := client(t, s.Endpoints())
	wch := cl.Watch(t.Context(), "k")
	if _, err := cl.Put(ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	<-wch // the watch stream is open
	lease, err := cl.Grant(ctx(t), 60)
	if err != nil {
		t.Fatal(err)
	}
	kctx, kcancel := context.WithCancel(t.Context())
	defer kcancel()
	ka, err := cl.KeepAlive(kctx, lease.ID) // a keepalive stream
	if err != nil {
		t.Fatal(err)
	}
	<-ka

	began := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// etcd alone waits its request timeout (7s) for open streams.
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("Close() took %s with open streams; want it quick", took)
	}
	select {
	case <-s.Err():
	default:
		t.Errorf("Err() not closed after Close()")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  embedded.Config
		want []string // each must be named by the error
	}{
		{"no dir", embedded.Config{}, []string{"Config.Dir"}},
		{"no scheme", embedded.Config{Dir: "d", ClientURLs: []string{"127.0.0.1:2379"}}, []string{"Config.ClientURLs", "127.0.0.1:2379"}},
		{"hostname to listen on", embedded.Config{Dir: "d", PeerURLs: []string{"http://example.com:2380"}}, []string{"Config.PeerURLs", "example.com"}},
		{"https without cert", embedded.Config{Dir: "d", ClientURLs: []string{"https://127.0.0.1:2379"}}, []string{"Config.ClientTLS"}},
		{"upper-case https without cert", embedded.Config{Dir: "d", ClientURLs: []string{"HTTPS://127.0.0.1:2379"}}, []string{"Config.ClientURLs", "HTTPS", "lower case"}},
		{"mixed-case http scheme", embedded.Config{Dir: "d", InitialCluster: "m1=hTtp://127.0.0.1:2380"}, []string{"Config.InitialCluster", "hTtp"}},
		{"cert without key", embedded.Config{Dir: "d", PeerTLS: embedded.TLS{CertFile: "c.pem"}}, []string{"Config.PeerTLS", "c.pem"}},
		{"client cert auth without CA", embedded.Config{Dir: "d", ClientTLS: embedded.TLS{ClientCertAuth: true}}, []string{"Config.ClientTLS.TrustedCAFile"}},
		{"bad initial cluster", embedded.Config{Dir: "d", InitialCluster: "m1=http://127.0.0.1:2380,m2"}, []string{"Config.InitialCluster", `"m2"`}},
		{"bad cluster state", embedded.Config{Dir: "d", ClusterState: "old"}, []string{"Config.ClusterState", `"old"`}},
		{"election too short", embedded.Config{Dir: "d", HeartbeatInterval: 100 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond}, []string{"Config.ElectionTimeout (200ms)", "Config.HeartbeatInterval (100ms)"}},
		{"two problems", embedded.Config{ClusterState: "old"}, []string{"Config.Dir", "Config.ClusterState"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if !errors.Is(err, embedded.ErrInvalidConfig) || !errors.Is(err, tenure.ErrInvalidConfig) {
				t.Fatalf("Validate() = %v; want embedded.ErrInvalidConfig, matching tenure.ErrInvalidConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q; want it to name %s", err, w)
				}
			}
			if _, serr := embedded.Start(context.Background(), tc.cfg); !errors.Is(serr, embedded.ErrInvalidConfig) {
				t.Errorf("Start() = %v; want the validation error", serr)
			}
		})
	}
	if err := localConfig(t).Validate(); err != nil {
		t.Errorf("Validate() of a good config = %v", err)
	}
}

func TestStartGivesUp(t *testing.T) {
	// One member of a three-member cluster, alone: never ready.
	cfgs, err := embedded.LocalCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("timeout", func(t *testing.T) {
		cfg := cfgs[0]
		cfg.StartTimeout = 300 * time.Millisecond
		began := time.Now()
		s, err := embedded.Start(context.Background(), cfg)
		if err == nil {
			s.Close()
			t.Fatal("Start() of a member without quorum succeeded")
		}
		if !strings.Contains(err.Error(), "StartTimeout (300ms)") {
			t.Errorf("Start() error = %q; want it to name Config.StartTimeout", err)
		}
		if took := time.Since(began); took > 3*time.Second {
			t.Errorf("Start() gave up after %s; want about 300ms", took)
		}
	})
	t.Run("context", func(t *testing.T) {
		c, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		s, err := embedded.Start(c, cfgs[1])
		if err == nil {
			s.Close()
			t.Fatal("Start() of a member without quorum succeeded")
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Start() error = %v; want it to wrap the context's error", err)
		}
	})
	t.Run("port in use", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		cfg := localConfig(t)
		cfg.ClientURLs = []string{"http://" + l.Addr().String()}
		s, err := embedded.Start(ctx(t), cfg)
		if err == nil {
			s.Close()
			t.Fatal("Start() on a port in use succeeded")
		}
		if !strings.Contains(err.Error(), "address already in use") {
			t.Errorf("Start() error = %q; want it to say the address is in use", err)
		}
	})
}

func TestLogging(t *testing.T) {
	var buf syncBuffer
	cfg := localConfig(t)
	cfg.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.LogLevel = slog.LevelInfo
	s := start(t, cfg)
	s.Close()
	if out := buf.String(); !strings.Contains(out, "level=INFO") || !strings.Contains(out, cfg.Name) {
		t.Errorf("etcd's info records did not reach Config.Logger:\n%.500s", out)
	}

	// By default only errors are forwarded: a clean start and stop logs
	// nothing.
	var quiet syncBuffer
	cfg = localConfig(t)
	cfg.Logger = slog.New(slog.NewTextHandler(&quiet, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s = start(t, cfg)
	s.Close()
	if quiet.Len() != 0 {
		t.Errorf("default LogLevel forwarded:\n%.500s", quiet.String())
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (b *syncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Len()
}
