// Package bench holds the end-to-end tests of tenure bench: its reports
// (JSON, and HTML pages rendered in headless Chromium) on a key, on a
// partition group and for the footprint, and its refusals of bad input.
// The tests are in *_test.go files; they run the tenure binary that
// e2e.Main builds.
package bench
