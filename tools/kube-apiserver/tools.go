//go:build tools

// Package tools pins kube-apiserver for tenure's tests: build.sh builds
// k8s.io/kubernetes/cmd/kube-apiserver from this module into
// bin/kube-apiserver. It is a module of its own so that the main module
// never depends on k8s.io/kubernetes.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
