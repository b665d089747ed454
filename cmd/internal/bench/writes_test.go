package bench

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestEtcdWritesAt: the writes counted from etcd members' Prometheus
// endpoints are the ones EtcdWrites counts in process, summed over the
// endpoints. An etcd member runs in this process, its metrics served on a
// loopback endpoint, scraped twice as if there were two members.
func TestEtcdWritesAt(t *testing.T) {
	etcdTarget(t)
	srv := httptest.NewServer(promhttp.Handler())
	defer srv.Close()
	ctx := context.Background()
	direct, err := EtcdWrites(ctx)
	if err != nil || direct == 0 {
		t.Fatalf("EtcdWrites = %d, %v; want the writes of the etcd member started (a fresh member commits a few)", direct, err)
	}
	scraped, err := EtcdWritesAt([]string{srv.URL + "/metrics", srv.URL + "/metrics"})(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if scraped < 2*direct || scraped > 2*direct+20 {
		t.Errorf("EtcdWritesAt(the same endpoint twice) = %d; want twice EtcdWrites (%d), give or take the writes in between", scraped, direct)
	}
	if _, err := EtcdWritesAt([]string{"http://127.0.0.1:1/metrics"})(ctx); err == nil {
		t.Errorf("EtcdWritesAt(a closed port) succeeded; want an error naming it")
	}
}
