package etcdtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/etcd"
)

// TestCloseWithWatchAfterServerStopped: a coordinator whose server has
// stopped closes at once, open watches and all. clientv3 closes a watch's
// channel only once its stream has sent the cancel, and a stream whose
// server went away waits to send for as long as no server answers: a
// Close that waited for its watches' channels to close hung (seen: over
// ten minutes, in TestDialTLS).
func TestCloseWithWatchAfterServerStopped(t *testing.T) {
	t.Parallel()
	urls, err := embedded.FreeLocalURLs(2)
	if err != nil {
		t.Fatal(err)
	}
	s, err := embedded.Start(t.Context(), embedded.Config{Dir: t.TempDir(), ClientURLs: urls[:1], PeerURLs: urls[1:]})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := etcd.Dial(context.Background(), etcd.Config{Endpoints: s.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, c, "closewatch/k", "alice", 2*time.Second)
	for _, key := range []string{"closewatch/k", "closewatch/other"} {
		ch, err := c.Watch(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		<-ch
	}
	s.Close()
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Logf("Close() = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10s of its server's stop, with two watches open")
	}
}
