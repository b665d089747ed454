#!/bin/sh
# Builds kube-apiserver from the Go module proxy into bin/kube-apiserver,
# where tenure's tests look for it (TENURE_KUBE_APISERVER overrides the
# path they use). This module requires k8s.io/kubernetes with every
# k8s.io staging module replaced by its v0.X release, so nothing but the
# module proxy is needed. The first build takes 10 to 30 minutes on two
# cores; the Go build cache keeps it, so later builds take seconds.
set -eu
cd "$(dirname "$0")"
# This module is not in the repository's go.work: build it on its own.
GOWORK=off go build -o bin/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
echo "built $(pwd)/bin/kube-apiserver"
