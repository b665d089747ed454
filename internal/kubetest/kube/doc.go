// Package kube holds the tests of tenure/kube that need a real
// kube-apiserver: conformance, interoperation with client-go's
// leaderelection, partition groups, stale reads and refusals, each against
// a server that kubetest starts.
//
// They live in this test-only module, not beside the package, so that
// tenure/kube's go.mod requires only what the library needs (client-go)
// and an application importing it does not get kubetest's embedded etcd
// server in its module graph. Tests of tenure/kube that need no server (the
// record's expiry and token rules, names, refusal classes, fuzz targets)
// stay in kube/.
package kube
