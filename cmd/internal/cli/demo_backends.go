package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
	"github.com/tenure-dev/tenure/postgres"
)

// demoNodeName is the name (and holder) of demo node i, from 1.
func demoNodeName(i int) string { return fmt.Sprintf("node-%d", i) }

// proxies cuts demo nodes off their coordinator by cutting their own TCP
// proxy to it.
type proxies map[string]*tcpproxy.Proxy

func (p proxies) Partition(holder string) { p[holder].Cut() }
func (p proxies) Heal(holder string)      { p[holder].Heal() }

func (p proxies) close() {
	for _, px := range p {
		px.Close()
	}
}

// etcdDemo runs the demo on an etcd member started in a temporary
// directory, each node with its own client connection through its own
// proxy.
func etcdDemo(ctx context.Context, out io.Writer, f demoFlags) error {
	dir, err := os.MkdirTemp("", "tenure-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	peer, err := embedded.FreeLocalURLs(1)
	if err != nil {
		return err
	}
	began := time.Now()
	srv, err := embedded.Start(ctx, embedded.Config{
		Dir:        dir,
		Name:       "demo",
		ClientURLs: []string{"http://127.0.0.1:0"},
		PeerURLs:   peer,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(out, "Coordinator: an etcd member at %s (data in %s), ready in %s.\n",
		srv.Endpoints()[0], dir, time.Since(began).Round(time.Millisecond))

	target := strings.TrimPrefix(srv.Endpoints()[0], "http://")
	px := proxies{}
	defer px.close()
	coords := map[string]tenure.Coordinator{}
	defer func() {
		for _, c := range coords {
			c.Close()
		}
	}()
	for i := 1; i <= f.nodes; i++ {
		name := demoNodeName(i)
		p, err := tcpproxy.New("tcp", target)
		if err != nil {
			return err
		}
		px[name] = p
		c, err := etcd.Dial(ctx, etcd.Config{Endpoints: []string{"http://" + p.Addr()}, DialTimeout: 5 * time.Second})
		if err != nil {
			return err
		}
		coords[name] = c
	}
	return runDemo(ctx, out, func(name string) tenure.Coordinator { return coords[name] }, px, f)
}

// postgresDemo runs the demo on the PostgreSQL database dsn names, each
// node with its own pool through its own proxy.
func postgresDemo(ctx context.Context, out io.Writer, dsn string, dialTimeout time.Duration, f demoFlags) error {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return usageError("--postgres: %w %s", postgres.ErrInvalidDSN, postgres.RedactDSN(dsn))
	}
	network, target := "tcp", net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
	if strings.HasPrefix(cfg.ConnConfig.Host, "/") {
		network, target = "unix", fmt.Sprintf("%s/.s.PGSQL.%d", cfg.ConnConfig.Host, cfg.ConnConfig.Port)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = dialTimeout
	}
	cfg.ConnConfig.Fallbacks = nil // every connection goes through the node's proxy
	fmt.Fprintf(out, "Coordinator: PostgreSQL at %s.\n", postgres.RedactDSN(dsn))

	px := proxies{}
	defer px.close()
	var pools []*pgxpool.Pool
	coords := map[string]tenure.Coordinator{}
	defer func() {
		for _, c := range coords {
			c.Close()
		}
		for _, p := range pools {
			p.Close()
		}
	}()
	for i := 1; i <= f.nodes; i++ {
		name := demoNodeName(i)
		p, err := tcpproxy.New(network, target)
		if err != nil {
			return err
		}
		px[name] = p
		host, port, _ := net.SplitHostPort(p.Addr())
		pc := cfg.Copy()
		pc.ConnConfig.Host = host
		n, _ := strconv.Atoi(port)
		pc.ConnConfig.Port = uint16(n)
		pool, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			return fmt.Errorf("postgres: open %s: %w", postgres.RedactDSN(dsn), err)
		}
		pools = append(pools, pool)
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		err = pool.Ping(dctx)
		if err == nil {
			coords[name], err = postgres.New(dctx, pool)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("postgres: connect to %s: %w", postgres.RedactDSN(dsn), err)
		}
	}
	return runDemo(ctx, out, func(name string) tenure.Coordinator { return coords[name] }, px, f)
}
