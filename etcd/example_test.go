package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
)

// Leading a key on etcd: while this process leads "scheduler", it writes
// the next job to etcd through a Register, which rejects the write of a
// leader whose token is no longer the newest. The README shows lead's
// body.
func Example() {
	if err := lead(context.Background()); err != nil {
		log.Fatal(err)
	}
}

// lead runs the scheduler's work while this process leads.
func lead(ctx context.Context) error {
	coord, err := etcd.Dial(ctx, etcd.Config{Endpoints: []string{"127.0.0.1:2379"}})
	if err != nil {
		return err
	}
	defer coord.Close()
	store := etcd.NewRegister(coord.Client(), "/app/fence") // keeps the newest token that wrote
	cfg := tenure.DefaultConfig()                           // TTL 10s, renew every TTL/3, margin 1s, drift 1%
	cfg.Key = "scheduler"
	elector, err := tenure.NewElector(coord, cfg) // every bad field named at once
	if err != nil {
		return err
	}
	return elector.Run(ctx, func(ctx context.Context, term *tenure.Term) error {
		// A stale token is rejected (tenure.ErrStaleToken); returning that steps down.
		_, err := store.Write(ctx, term.Token(), clientv3.OpPut("/app/next-job", "42"))
		return err
	})
}

// Validate names every field that cannot work, before anything is dialled.
func ExampleConfig_Validate() {
	err := etcd.Config{Endpoints: []string{"https://10.0.0.1:2379", "10.0.0.2"}, Password: "secret"}.Validate()
	fmt.Println(errors.Is(err, tenure.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// true
	// etcd: invalid config: Config.Endpoints: "https://10.0.0.1:2379" is https but Config.TLS is nil
	// etcd: invalid config: Config.Endpoints: "10.0.0.2": want host:port or scheme://host:port: address 10.0.0.2: missing port in address
	// etcd: invalid config: Config.Password is set but Config.Username is empty
}
