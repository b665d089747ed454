package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/prometheus/exporter-toolkit/web"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// webFlags are --http and --http-config: where the status page and
// /metrics are served, and the Prometheus web configuration file that
// gives them TLS and basic authentication ("" for plain HTTP).
type webFlags struct {
	addr   string
	config string
}

// web returns the --http flags of tenure run.
func (f *runFlags) web() webFlags { return webFlags{addr: f.http, config: f.httpConfig} }

// registerHTTPConfig adds --http-config to fs.
func registerHTTPConfig(fs *pflag.FlagSet, path *string) {
	fs.StringVar(path, "http-config", "",
		"Prometheus web configuration `file` (tls_server_config, basic_auth_users: the file exporters take as --web.config.file) that gives --http TLS and basic authentication")
}

// checkHTTPFlags checks --http (addr) and --http-config (config) of cmd
// before anything is dialled: the address's form, and that the
// configuration file loads, its certificates included.
func checkHTTPFlags(cmd *cobra.Command, addr, config string) error {
	if err := checkListenAddr(addr); err != nil {
		return usageError("%s: %w", flagRef(cmd, "http"), err)
	}
	if config == "" {
		return nil
	}
	if addr == "" {
		return usageError("%s is set but --http is not: it configures the server --http starts", flagRef(cmd, "http-config"))
	}
	if err := web.Validate(config); err != nil {
		return usageError("%s %s: %w", flagRef(cmd, "http-config"), config, err)
	}
	return nil
}

// logServing logs, as msg, the address the status page is served on and
// how it is protected (see warnPlainHTTP).
func logServing(log *slog.Logger, msg string, addr net.Addr, config string) {
	if config == "" {
		log.Info(msg, "http", addr.String())
		warnPlainHTTP(log, addr.String(), config)
		return
	}
	log.Info(msg, "http", addr.String(), "http_config", config)
}

// warnPlainHTTP warns, once at start, when --http serves plain HTTP (no
// --http-config) on addr, the address listened on, and addr is not
// loopback-only.
func warnPlainHTTP(log *slog.Logger, addr, config string) {
	if config != "" || loopbackAddr(addr) {
		return
	}
	log.Warn("--http serves the status page and /metrics unauthenticated and unencrypted beyond this machine: "+
		"anyone who reaches it reads keys, holders and tokens; give --http-config (TLS, basic authentication) "+
		"or a loopback address (127.0.0.1)", "http", addr)
}

// loopbackAddr reports whether host:port addr, as given to --http or as
// listened on, reaches this machine alone: its host is localhost or a
// loopback IP address. An empty host, 0.0.0.0 and :: listen on every
// address; any other name may resolve beyond loopback.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && loopbackHost(host)
}

// serveWeb serves hs on ln, with the TLS and basic authentication of the
// web configuration file config when it is not "". The file is read again
// for each request and each TLS handshake: a changed password or
// certificate applies without a restart.
func serveWeb(ln net.Listener, hs *http.Server, config string, log *slog.Logger) error {
	if config == "" {
		return hs.Serve(ln)
	}
	// The toolkit's own informational records repeat what logServing said.
	quiet := slog.New(leastLevel{h: log.Handler(), least: slog.LevelWarn})
	if err := web.Serve(ln, hs, &web.FlagConfig{WebConfigFile: &config}, quiet); err != nil {
		return fmt.Errorf("--http-config %s: %w", config, err)
	}
	return nil
}

// leastLevel is a slog.Handler that drops the records of h below least.
type leastLevel struct {
	h     slog.Handler
	least slog.Level
}

func (l leastLevel) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= l.least && l.h.Enabled(ctx, lv)
}
func (l leastLevel) Handle(ctx context.Context, r slog.Record) error { return l.h.Handle(ctx, r) }
func (l leastLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return leastLevel{h: l.h.WithAttrs(as), least: l.least}
}
func (l leastLevel) WithGroup(name string) slog.Handler {
	return leastLevel{h: l.h.WithGroup(name), least: l.least}
}
