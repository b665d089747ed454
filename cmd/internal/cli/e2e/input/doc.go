// Package input holds the end-to-end tests of what tenure says to input
// it cannot use: bad flags and arguments refused before dialling, an
// unreachable coordinator within --dial-timeout, errors that say what to
// do, help, the exit codes of the binary, and the line that names the
// coordinator chosen and what chose it. The tests are in *_test.go files;
// they run the tenure binary that e2e.Main builds.
package input
