package monitor

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

//go:embed static
var static embed.FS

// Handler returns the endpoints: / (the status page), /static/ (its
// assets), /status, /health, /leader and /metrics. Callers may add their
// own routes to the mux.
func (m *Monitor) Handler() *http.ServeMux {
	mux := http.NewServeMux()
	assets, _ := fs.Sub(static, "static") // the directory is embedded
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(assets)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		http.ServeFileFS(w, r, assets, "index.html")
	})
	mux.HandleFunc("GET /status", m.serveStatus)
	mux.HandleFunc("GET /health", m.serveHealth)
	mux.HandleFunc("GET /leader", m.serveLeader)
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.cfg.Gatherer, promhttp.HandlerOpts{}))
	return mux
}

func (m *Monitor) serveStatus(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(m.Status())
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
