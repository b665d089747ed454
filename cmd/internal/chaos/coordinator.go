package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure/embedded"
)

// startCoordinator starts embedded members (or names the external
// coordinator) and returns the addresses to proxy to.
func (r *runner) startCoordinator(ctx context.Context) ([]string, error) {
	o := r.o
	switch {
	case o.Postgres != "":
		cfg, err := pgx.ParseConfig(o.Postgres)
		if err != nil {
			return nil, fmt.Errorf("chaos: postgres DSN: %w", err)
		}
		if strings.HasPrefix(cfg.Host, "/") {
			return nil, errors.New("chaos: postgres DSN names a Unix socket; the proxies need host and port")
		}
		return []string{net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))}, nil
	case o.Kubeconfig != "" || o.KubeAPIServer != "":
		return r.startKube(ctx)
	case len(o.Endpoints) > 0:
		var out []string
		for _, ep := range o.Endpoints {
			hp, _ := hostPort(ep)
			out = append(out, hp)
		}
		return out, nil
	}
	return r.startMembers(ctx)
}

// startMembers starts the embedded etcd members and returns their client
// addresses.
func (r *runner) startMembers(ctx context.Context) ([]string, error) {
	o := r.o
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "tenure-verify-")
		if err != nil {
			return nil, err
		}
		dir = d
		r.o.Dir = d
		r.cleanupDir = d
	}
	if o.Members == 1 {
		peers, err := embedded.FreeLocalURLs(1)
		if err != nil {
			return nil, err
		}
		r.memberCfg = []embedded.Config{{Dir: dir + "/m1", Name: "m1", ClientURLs: []string{"http://127.0.0.1:0"}, PeerURLs: peers}}
	} else {
		cfgs, err := embedded.LocalCluster(dir, o.Members)
		if err != nil {
			return nil, err
		}
		r.memberCfg = cfgs
	}
	r.members = make([]*embedded.Server, len(r.memberCfg))
	errs := make([]error, len(r.memberCfg))
	var wg sync.WaitGroup
	for i, cfg := range r.memberCfg {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.members[i], errs[i] = embedded.Start(ctx, cfg)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []string
	for i, s := range r.members {
		hp, _ := hostPort(s.Endpoints()[0])
		out = append(out, hp)
		r.memberCfg[i] = s.Config()
		r.memberCfg[i].ClientURLs = []string{"http://" + hp}
	}
	return out, nil
}

// proxiedDSN returns dsn with its host and port replaced by addr.
func proxiedDSN(dsn, addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			u.Host = addr
			return u.String()
		}
	}
	return dsn + " host=" + host + " port=" + port
}

// restartMember stops etcd member f.Member for f.Dur, then starts it again.
func (r *runner) restartMember(ctx context.Context, f Fault) string {
	if f.Member >= len(r.members) {
		return ""
	}
	r.members[f.Member].Close()
	sleepCtx(ctx, f.Dur)
	s, err := embedded.Start(context.WithoutCancel(ctx), r.memberCfg[f.Member])
	if err != nil {
		return "restart failed: " + err.Error()
	}
	r.members[f.Member] = s
	return ""
}
