// Package backends holds the end-to-end tests of tenure run, status and
// watch on each coordinator: embedded etcd, PostgreSQL and a real
// kube-apiserver give the same answers, a SIGKILLed leader is taken over
// on each, and a member whose --ttl differs from the leader's lease warns.
// The tests are in *_test.go files; they run the tenure binary that
// e2e.Main builds.
package backends
