package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/etcd"
)

// exampleServer starts a one-member etcd for an example of package etcd.
func exampleServer() (endpoints []string, stop func()) {
	dir, err := os.MkdirTemp("", "tenure-example")
	if err != nil {
		log.Fatal(err)
	}
	urls, err := embedded.FreeLocalURLs(2)
	if err != nil {
		log.Fatal(err)
	}
	srv, err := embedded.Start(context.Background(), embedded.Config{Dir: dir, ClientURLs: urls[:1], PeerURLs: urls[1:]})
	if err != nil {
		log.Fatal(err)
	}
	return srv.Endpoints(), func() {
		srv.Close()
		os.RemoveAll(dir)
	}
}

// Two nodes compete for a key; the second is told who holds it, takes over
// the moment the first releases it, and gets a greater fencing token.
func Example_etcd() {
	endpoints, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	coord, err := etcd.Dial(ctx, etcd.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer coord.Close()

	a, err := coord.Acquire(ctx, "scheduler", "node-a", 5*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s leads with a %s lease\n", a.Holder, a.TTL)

	_, err = coord.Acquire(ctx, "scheduler", "node-b", 5*time.Second)
	var held *tenure.HeldError
	if errors.As(err, &held) {
		fmt.Printf("node-b refused: held by %s\n", held.Holder)
	}

	// node-b watches the key and campaigns when it is released.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := coord.Watch(wctx, "scheduler")
	if err != nil {
		log.Fatal(err)
	}
	<-events // the current state: held by node-a
	if err := coord.Release(ctx, a); err != nil {
		log.Fatal(err)
	}
	for ev := range events {
		if !ev.Held {
			break
		}
	}
	b, err := coord.Acquire(ctx, "scheduler", "node-b", 5*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s leads; its token is greater: %v\n", b.Holder, b.Token > a.Token)
	// Output:
	// node-a leads with a 5s lease
	// node-b refused: held by node-a
	// node-b leads; its token is greater: true
}

// A write to etcd that commits only while the writer still leads.
func Example_etcdFencedTxn() {
	endpoints, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	coord, err := etcd.Dial(ctx, etcd.Config{Endpoints: endpoints})
	if err != nil {
		log.Fatal(err)
	}
	defer coord.Close()

	old, err := coord.Acquire(ctx, "orders", "node-a", 5*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := coord.FencedTxn(ctx, old, clientv3.OpPut("orders/next-id", "100")); err != nil {
		log.Fatal(err)
	}

	// node-a's grant is superseded (here: it acquires again; in real life,
	// it paused past its lease and another node took over).
	if _, err := coord.Acquire(ctx, "orders", "node-a", 5*time.Second); err != nil {
		log.Fatal(err)
	}
	_, err = coord.FencedTxn(ctx, old, clientv3.OpPut("orders/next-id", "99"))
	fmt.Println("stale write rejected:", tenure.IsStale(err))

	resp, err := coord.Client().Get(ctx, "orders/next-id")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("orders/next-id = %s\n", resp.Kvs[0].Value)
	// Output:
	// stale write rejected: true
	// orders/next-id = 100
}

// A resource in etcd written by successive leaders: the register remembers
// the highest token and refuses older ones.
func Example_etcdRegister() {
	endpoints, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	reg := etcd.NewRegister(client, "reports/daily/token")
	if _, err := reg.Write(ctx, 7, clientv3.OpPut("reports/daily", "by token 7")); err != nil {
		log.Fatal(err)
	}
	_, err = reg.Write(ctx, 5, clientv3.OpPut("reports/daily", "by token 5"))
	fmt.Println("token 5 rejected:", tenure.IsStale(err))
	tok, err := reg.Token(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("highest token:", tok)
	// Output:
	// token 5 rejected: true
	// highest token: 7
}
