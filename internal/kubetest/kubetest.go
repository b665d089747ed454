// Package kubetest starts a real kube-apiserver for tests: the binary built
// by tools/kube-apiserver/build.sh (or the one TENURE_KUBE_APISERVER names),
// against an etcd of its own (embedded in the test process, or Debian's
// /usr/bin/etcd), on free loopback ports, stopped when the test ends.
//
// The server is package apiserver's: static bearer tokens (Admin is in
// system:masters, every name given to WithUser has a token of its own and
// no groups but system:authenticated), AlwaysAllow or, under WithRBAC,
// RBAC, a self-signed serving certificate, no endpoint reconciler. It is
// ready in about two seconds and uses about 300 MB.
//
// Without the binary, require.KubeAPIServer decides: the test fails when
// kube-apiserver is required (TENURE_REQUIRE_KUBE_APISERVER=1, or CI=true),
// and is otherwise skipped with one notice saying how to build it.
package kubetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnvBinary names the variable that overrides where kube-apiserver is.
const EnvBinary = "TENURE_KUBE_APISERVER"

// binaryInTree is where build.sh puts kube-apiserver, relative to the root
// of the tenure checkout.
const binaryInTree = "tools/kube-apiserver/bin/kube-apiserver"

// Binary returns the path of kube-apiserver: $TENURE_KUBE_APISERVER when
// set, otherwise tools/kube-apiserver/bin/kube-apiserver in the tenure
// checkout that holds the working directory. The error says why there is
// none.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	root, err := checkoutRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, binaryInTree)
	if err := executable(p); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return p, nil
}

// executable reports whether p is a file that can be run.
func executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// checkoutRoot finds the directory of tenure's go.mod above the working
// directory.
func checkoutRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/tenure-dev/tenure\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no tenure checkout above the working directory (set " + EnvBinary + ")")
		}
		dir = parent
	}
}
