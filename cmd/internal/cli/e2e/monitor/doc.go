// Package monitor holds the end-to-end tests of what tenure serves for
// monitoring: the HTTP status page rendered in headless Chromium, /metrics
// scraped by a real Prometheus (also over TLS with basic auth), and the
// log format. The tests are in *_test.go files; they run the tenure binary
// that e2e.Main builds.
package monitor
