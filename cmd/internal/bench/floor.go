package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A floor measures the least a handover can take on the target when the
// coordinator keeps nothing but the key and its lease: the release's
// notification to the successor (on etcd a write and its watch event, on
// PostgreSQL a NOTIFY), plus one write round trip (the successor's
// acquisition).
type floor interface {
	measure(ctx context.Context) (time.Duration, error)
	close()
}

// etcdFloor: a put by one client, from its send until another client's
// watch delivers it; then one transaction of the shape of tenure's
// acquisition.
type etcdFloor struct {
	writer, watcher *clientv3.Client
	key             string
	events          clientv3.WatchChan
	cancel          context.CancelFunc
}

func newEtcdFloor(ctx context.Context, t Target, key string) (*etcdFloor, error) {
	f := &etcdFloor{key: key}
	var err error
	if f.writer, err = t.etcdClient(ctx); err != nil {
		return nil, err
	}
	if f.watcher, err = t.etcdClient(ctx); err != nil {
		f.writer.Close()
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f.cancel = cancel
	f.events = f.watcher.Watch(clientv3.WithRequireLeader(wctx), key)
	return f, nil
}

func (f *etcdFloor) measure(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	if _, err := f.writer.Put(ctx, f.key, "x"); err != nil {
		return 0, fmt.Errorf("bench: floor put: %w", err)
	}
	if _, err := wait(ctx, f.events, 10*time.Second, "floor watch event"); err != nil {
		return 0, err
	}
	k := f.key + "/txn"
	if _, err := f.watcher.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "!=", -1)).
		Then(clientv3.OpPut(k, "x")).
		Commit(); err != nil {
		return 0, fmt.Errorf("bench: floor txn: %w", err)
	}
	return time.Since(start), nil
}

func (f *etcdFloor) close() {
	f.cancel()
	f.watcher.Close()
	f.writer.Close()
}

// pgFloor: a NOTIFY by one session, received by another that LISTENs; then
// one UPDATE of the seed's shape.
type pgFloor struct {
	pool     *pgxpool.Pool
	listener *pgx.Conn
	key      string
}

const floorChannel = "tenure_bench_floor"

func newPGFloor(ctx context.Context, t Target, key string) (*pgFloor, error) {
	p, err := t.pool(ctx, 2)
	if err != nil {
		return nil, err
	}
	f := &pgFloor{pool: p, key: key}
	if err := (Seed{p}).Setup(ctx, key); err != nil {
		p.Close()
		return nil, err
	}
	if f.listener, err = pgx.Connect(ctx, t.Postgres); err != nil {
		p.Close()
		return nil, fmt.Errorf("bench: floor listener: %w", err)
	}
	if _, err := f.listener.Exec(ctx, "LISTEN "+floorChannel); err != nil {
		f.close()
		return nil, fmt.Errorf("bench: floor LISTEN: %w", err)
	}
	return f, nil
}

func (f *pgFloor) measure(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	if _, err := f.pool.Exec(ctx, "SELECT pg_notify($1, $2)", floorChannel, f.key); err != nil {
		return 0, fmt.Errorf("bench: floor NOTIFY: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := f.listener.WaitForNotification(wctx); err != nil {
		return 0, fmt.Errorf("bench: floor notification: %w", err)
	}
	notified := time.Since(start)
	start = time.Now()
	if _, _, err := (Seed{f.pool}).Acquire(ctx, f.key, "floor", time.Second); err != nil {
		return 0, err
	}
	return notified + time.Since(start), nil
}

func (f *pgFloor) close() {
	cctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	f.listener.Close(cctx)
	f.pool.Close()
}
