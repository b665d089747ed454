// Package require decides what a test does when a component it needs is
// missing: the etcd binary, etcdctl, PostgreSQL, Chromium, Prometheus or
// kube-apiserver. When the component is required (its TENURE_REQUIRE_*
// variable is true, or, when that is unset, CI is true) the test fails.
// Otherwise the test is skipped, and one line per component names what was
// skipped and how to install it, printed where "go test ./..." shows it
// even without -v and even when the package passes.
package require

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// A Component is something tests need that a machine may lack.
type Component struct {
	// Name says what it is: "the etcd binary (/usr/bin/etcd)".
	Name string
	// Env is the variable that requires it: "TENURE_REQUIRE_ETCD_BINARY".
	Env string
	// Install says how to get it: "apt-get install etcd-server".
	Install string
}

// The components tenure's tests need.
var (
	// EtcdBinary is Debian's etcd 3.4 server, for the conformance suite
	// against an etcd that is not embedded.
	EtcdBinary = Component{Name: "the etcd binary (/usr/bin/etcd)", Env: "TENURE_REQUIRE_ETCD_BINARY", Install: "apt-get install etcd-server"}
	// Etcdctl is Debian's etcdctl, the peer of tenure bench footprint
	// (etcdctl lock).
	Etcdctl = Component{Name: "etcdctl (/usr/bin/etcdctl, or in PATH)", Env: "TENURE_REQUIRE_ETCDCTL", Install: "apt-get install etcd-client"}
	// Postgres is a PostgreSQL server: initdb and postgres, or a DSN in
	// TENURE_TEST_POSTGRES.
	Postgres = Component{Name: "PostgreSQL (initdb and postgres, or TENURE_TEST_POSTGRES=DSN)", Env: "TENURE_REQUIRE_POSTGRES", Install: "apt-get install postgresql-15"}
	// Chromium is a headless Chromium, for the HTML pages.
	Chromium = Component{Name: "Chromium (chromium)", Env: "TENURE_REQUIRE_CHROMIUM", Install: "apt-get install chromium"}
	// Prometheus is Debian's Prometheus server and promtool, for the
	// metrics and alert rules.
	Prometheus = Component{Name: "Prometheus (prometheus, promtool)", Env: "TENURE_REQUIRE_PROMETHEUS", Install: "apt-get install prometheus"}
	// KubeAPIServer is kube-apiserver built from the nested module in
	// tools/kube-apiserver, for the Kubernetes coordinator (package kube).
	KubeAPIServer = Component{Name: "kube-apiserver (tools/kube-apiserver/bin/kube-apiserver, or TENURE_KUBE_APISERVER=path)", Env: "TENURE_REQUIRE_KUBE_APISERVER", Install: "tools/kube-apiserver/build.sh (10 to 30 minutes the first time, seconds after)"}
)

// Required reports whether c must be present: its variable when set (1,
// true or yes; 0, false or no, in any case), otherwise whether CI is true.
// A value that is neither is an error naming the variable.
func (c Component) Required() (bool, error) {
	if v, ok := os.LookupEnv(c.Env); ok && v != "" {
		return parseBool(c.Env, v)
	}
	if v := os.Getenv("CI"); v != "" {
		b, err := parseBool("CI", v)
		return b && err == nil, nil // CI=anything-else is a CI system's own business
	}
	return false, nil
}

func parseBool(name, v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes":
		return true, nil
	case "0", "false", "no":
		return false, nil
	}
	return false, fmt.Errorf("%s=%q: want 1, true or yes (required) or 0, false or no", name, v)
}

// T is the part of testing.TB that Missing uses.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Missing ends test t because c is missing (err says why): it fails t when
// c is required, and otherwise prints the notice (once per component and
// process) and skips t.
func (c Component) Missing(t T, err error) {
	t.Helper()
	req, perr := c.Required()
	if perr != nil {
		t.Fatalf("%v", perr)
		return
	}
	if req {
		t.Fatalf("%s is required (%s, or CI=true) but missing: %v; install: %s", c.Name, c.Env, err, c.Install)
		return
	}
	notice(c, err)
	t.Skipf("%s is missing: %v; install: %s; set %s=1 to make this a failure", c.Name, err, c.Install, c.Env)
}

var (
	noticed sync.Map // Component.Env → struct{}
	// noticeTo returns where notices go; tests replace it.
	noticeTo = visibleStderr
)

// notice prints, once per component, the line that says what was skipped.
func notice(c Component, err error) {
	if _, dup := noticed.LoadOrStore(c.Env, struct{}{}); dup {
		return
	}
	w, closeW := noticeTo()
	defer closeW()
	fmt.Fprintf(w, "SKIPPED tests that need %s: %v; install: %s (%s=1 makes this a failure)\n", c.Name, err, c.Install, c.Env)
}

// visibleStderr returns a writer whose output "go test" does not swallow.
// In package-list mode go test keeps a passing test binary's output to
// itself, so the notice goes to the standard error of the parent process
// (the go command) when that is a pipe or a terminal; otherwise, or when
// it cannot be opened, to this process's own.
func visibleStderr() (w io.Writer, closeW func()) {
	path := fmt.Sprintf("/proc/%d/fd/2", os.Getppid())
	st, err := os.Stat(path)
	if err != nil || st.Mode()&(os.ModeNamedPipe|os.ModeCharDevice|os.ModeSocket) == 0 {
		// A regular file is not appended to from here: its writer's
		// offset would overwrite the line.
		return os.Stderr, func() {}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return os.Stderr, func() {}
	}
	return f, func() { f.Close() }
}
