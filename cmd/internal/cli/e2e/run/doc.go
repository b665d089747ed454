// Package run holds the end-to-end tests of tenure run on one key: the
// command runs only while its tenure leads, a SIGKILLed, paused or cut-off
// leader's command stops before another's starts with a greater token,
// signals, waits, metrics and the exit codes that say why a run ended. The
// tests are in *_test.go files; they run the tenure binary that e2e.Main
// builds.
package run
