package embedded_test

import (
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/internal/testpki"
)

// TestNewStreamsRefusedOnceClosing checks the interceptor that lets Close
// end: once Close has begun, a new stream is refused at once with
// Unavailable (over TLS, where etcd serves gRPC through its HTTP server,
// one accepted while gRPC's Stop waits for the others kept Stop waiting
// forever), while unary requests are served. The flag is set without
// closing, so the stream is opened at a known moment, not in a race with
// Close.
func TestNewStreamsRefusedOnceClosing(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"plain", false}, {"TLS", true}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := localConfig(t)
			ccfg := clientv3.Config{DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
			if tc.tls {
				pki := testpki.New(t)
				cfg.ClientURLs[0] = "https://" + strings.TrimPrefix(cfg.ClientURLs[0], "http://")
				cfg.ClientTLS = embedded.TLS{CertFile: pki.ServerCertFile, KeyFile: pki.ServerKeyFile}
				ccfg.TLS = pki.ClientConfig()
			}
			s := start(t, cfg)
			ccfg.Endpoints = s.Endpoints()
			cl, err := clientv3.New(ccfg)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			// A raw stream: clientv3's own retries a refused one.
			maint := pb.NewMaintenanceClient(cl.ActiveConnection())
			openStream := func() error {
				st, err := maint.Snapshot(ctx(t), &pb.SnapshotRequest{})
				if err == nil {
					_, err = st.Recv()
				}
				return err
			}
			if err := openStream(); err != nil {
				t.Fatalf("a stream before Close began: %v; want served", err)
			}
			embedded.SetClosing(s, true)
			defer embedded.SetClosing(s, false)
			began := time.Now()
			err = openStream()
			if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "closing") {
				t.Errorf("a stream once Close began: %v; want Unavailable, the member closing", err)
			}
			if took := time.Since(began); took > 2*time.Second {
				t.Errorf("a stream once Close began refused after %s; want at once", took)
			}
			if _, err := cl.Put(ctx(t), "k", "v"); err != nil {
				t.Errorf("a unary request once Close began: %v; want served", err)
			}
		})
	}
}
