package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/cmd/internal/monitor"
	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/prom"
)

// serveRunMonitor serves the monitoring endpoints of tenure run --http on
// addr (see package monitor): it sets cfg.Metrics, so that the elector
// reports through the monitor to Prometheus, and replaces *coord with one
// whose failed calls are counted. Call it before creating the elector;
// stop ends the serving and waits for it.
func serveRunMonitor(web webFlags, cfg *tenure.Config, coord *tenure.Coordinator, log *slog.Logger) (stop func(), err error) {
	reg, m, err := runMetrics()
	if err != nil {
		return nil, err
	}
	*coord = m.Instrument(*coord)
	mon, err := monitor.New(monitor.Config{
		Coordinator: *coord, Keys: []string{cfg.Key}, Identity: tenure.Identity(cfg.Holder, cfg.Instance), Metrics: m, Gatherer: reg,
	})
	if err != nil {
		return nil, err
	}
	cfg.Metrics = mon
	return listenMonitor(web, mon, log)
}

// runMetrics returns the registry of tenure run --http, with the Go
// runtime's and the process's collectors and tenure's metrics on it.
func runMetrics() (*prometheus.Registry, *prom.Metrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := prom.New(reg)
	return reg, m, err
}

// listenMonitor serves mon's endpoints on web.addr (--http of tenure run)
// and logs the address; stop ends the serving and waits for it.
func listenMonitor(web webFlags, mon *monitor.Monitor, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", web.addr)
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", web.addr, err)
	}
	logServing(log, "serving status and metrics", ln.Addr(), web.config)
	stop, _ = serveMonitor(ln, mon, mon.Handler(), web.config, log)
	return stop, nil
}

// serveServerMonitor serves the monitoring endpoints of tenure server
// --http on ln for member srv: the status page shows every key under
// prefix and the partition table of every group under it, /health and /healthz answer whether the member can serve, and
// /leader whether it leads raft. /metrics has the member's metrics and the
// tenure metrics of what it observes. done receives the error that ended
// the serving; stop ends it and waits.
func serveServerMonitor(ln net.Listener, webConfig string, srv *embedded.Server, prefix string, log *slog.Logger) (stop func(), done <-chan error, err error) {
	c, err := etcd.New(v3client.New(srv.Etcd().Server))
	if err != nil {
		return nil, nil, err
	}
	reg := prometheus.NewRegistry()
	m, err := prom.New(reg)
	if err != nil {
		return nil, nil, err
	}
	health := func(ctx context.Context) error { return memberHealth(ctx, srv) }
	ic, groups := m.InstrumentGroup(c), &groupFinder{}
	mon, err := monitor.New(monitor.Config{
		Coordinator: ic, Prefix: prefix, Metrics: m, Health: health, Leading: srv.IsLeader, Logger: log,
		Partitions: func(ctx context.Context, listed []tenure.Grant) ([]partition.Table, error) {
			return groups.tables(ctx, ic, listed)
		},
		// etcd registers the member's metrics (and the Go and process
		// collectors) with Prometheus's default registry.
		Gatherer: prometheus.Gatherers{prometheus.DefaultGatherer, reg},
	})
	if err != nil {
		return nil, nil, err
	}
	mux := mon.Handler()
	// /healthz, the name of earlier versions, answers as /health.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context())
		r.URL.Path = "/health"
		mux.ServeHTTP(w, r)
	})
	stopServe, done := serveMonitor(ln, mon, mux, webConfig, log)
	return func() {
		stopServe()
		_ = c.Close()
	}, done, nil
}

// serveMonitor runs mon and serves h on ln until stop is called, with the
// TLS and basic authentication of the web configuration file webConfig
// ("" for plain HTTP); done receives the error that ended the serving, if
// it ended by itself.
func serveMonitor(ln net.Listener, mon *monitor.Monitor, h http.Handler, webConfig string, log *slog.Logger) (stop func(), done <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	monDone := make(chan struct{})
	go func() {
		defer close(monDone)
		_ = mon.Run(ctx)
	}()
	// The server's own complaints (TLS handshakes that fail, say) go to
	// the log, in its format.
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	serveDone := make(chan struct{})
	go func() {
		defer close(serveDone)
		err := serveWeb(ln, hs, webConfig, log)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		errc <- err
		cancel()
	}()
	return func() {
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer scancel()
		_ = hs.Shutdown(sctx)
		<-serveDone
		<-monDone
	}, errc
}
