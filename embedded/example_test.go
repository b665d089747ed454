package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/etcd"
)

// An etcd member inside the process, and leader election on it.
func Example() {
	dir, err := os.MkdirTemp("", "tenure-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	urls, err := embedded.FreeLocalURLs(2)
	if err != nil {
		log.Fatal(err)
	}
	srv, err := embedded.Start(ctx, embedded.Config{Dir: dir, ClientURLs: urls[:1], PeerURLs: urls[1:]})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	coord, err := etcd.Dial(ctx, etcd.Config{Endpoints: srv.Endpoints()})
	if err != nil {
		log.Fatal(err)
	}
	defer coord.Close()

	g, err := coord.Acquire(ctx, "scheduler", "node-a", 5*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leader:", g.Holder, "ttl:", g.TTL)
	// Output: leader: node-a ttl: 5s
}

// A second member on a data directory in use fails at once, naming the
// process that holds it, instead of waiting for etcd's database lock.
func ExampleDirInUseError() {
	dir, err := os.MkdirTemp("", "tenure-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	urls, err := embedded.FreeLocalURLs(4)
	if err != nil {
		log.Fatal(err)
	}
	srv, err := embedded.Start(ctx, embedded.Config{Dir: dir, ClientURLs: urls[:1], PeerURLs: urls[1:2]})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	_, err = embedded.Start(ctx, embedded.Config{Dir: dir, ClientURLs: urls[2:3], PeerURLs: urls[3:]})
	var inUse *embedded.DirInUseError
	if errors.As(err, &inUse) {
		fmt.Println("in use by this process:", inUse.PID == os.Getpid())
	}
	// Output: in use by this process: true
}
