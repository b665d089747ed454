package monitor

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

//go:embed static
var static embed.FS

// Handler returns the endpoints: / (the status page), /static/ (its
// assets), /status, /status/partitions (pages of a partition table),
// /health, /leader and /metrics. Callers may add their own routes to the
// mux.
func (m *Monitor) Handler() *http.ServeMux {
	mux := http.NewServeMux()
	assets, _ := fs.Sub(static, "static") // the directory is embedded
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(assets)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		http.ServeFileFS(w, r, assets, "index.html")
	})
	mux.HandleFunc("GET /status", m.serveStatus)
	mux.HandleFunc("GET /status/partitions", m.servePartitions)
	mux.HandleFunc("GET /health", m.serveHealth)
	mux.HandleFunc("GET /leader", m.serveLeader)
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.cfg.Gatherer, promhttp.HandlerOpts{}))
	return mux
}

func (m *Monitor) serveStatus(w http.ResponseWriter, r *http.Request) {
	serveJSON(w, http.StatusOK, m.Status())
}

// servePartitions serves the page of a partition table that the query
// parameters group, state, owner, name, order, offset and limit select
// (see PartitionQuery): 400 naming a bad parameter, 404 for a group not
// shown.
func (m *Monitor) servePartitions(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := PartitionQuery{Group: v.Get("group"), State: v.Get("state"), Owner: v.Get("owner"), Name: v.Get("name"), Order: v.Get("order")}
	var errs []error
	for name, p := range map[string]*int{"offset": &q.Offset, "limit": &q.Limit} {
		if s := v.Get(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %q: want an integer", name, s))
			}
			*p = n
		}
	}
	page, err := m.Partitions(q)
	if err := errors.Join(append(errs, err)...); err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, ErrNoGroup) {
			code = http.StatusNotFound
		}
		serveJSON(w, code, map[string]string{"error": err.Error()})
		return
	}
	serveJSON(w, http.StatusOK, page)
}

// serveJSON serves v as JSON with code.
func serveJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// serveHealth answers 200 "ok" while Config.Health passes (always, when it
// is nil), 503 with the reason otherwise. It does not depend on the role.
func (m *Monitor) serveHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if m.cfg.Health != nil {
		if err := m.cfg.Health(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "unhealthy: %v\n", err)
			return
		}
	}
	fmt.Fprintln(w, "ok")
}

// serveLeader answers 200 "leader" while Leading, 503 "not leader"
// otherwise.
func (m *Monitor) serveLeader(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if m.Leading() {
		fmt.Fprintln(w, "leader")
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintln(w, "not leader")
}
