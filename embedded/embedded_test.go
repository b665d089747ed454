package embedded_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/tenure-dev/tenure/embedded"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func startOne(t *testing.T, dir string) *embedded.Server {
	t.Helper()
	urls, err := embedded.FreeLocalURLs(2)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s, err := embedded.Start(t.Context(), embedded.Config{Dir: dir, ClientURLs: urls[:1], PeerURLs: urls[1:]})
	if err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	t.Logf("member ready in %s", time.Since(start))
	return s
}

func client(t *testing.T, eps []string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSingle(t *testing.T) {
	s := startOne(t, t.TempDir())
	c := client(t, s.Endpoints())
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "a", "b"); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	wch := c.Watch(wctx, "a")
	if _, err := c.Put(ctx, "a", "c"); err != nil {
		t.Fatal(err)
	}
	<-wch
	start := time.Now()
	s.Close()
	t.Logf("closed in %s", time.Since(start))
	c.Close()
}
