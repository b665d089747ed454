// Package server holds the end-to-end tests of tenure server: /healthz and
// /metrics, a clean shutdown, restarts that keep tokens increasing, a
// three-member cluster, TLS, a port in use and an insecure listen address
// refused. The tests are in *_test.go files; they run the tenure binary
// that e2e.Main builds.
package server
