// Package term holds the end-to-end tests of how a term of tenure run ends:
// the guard kills the command's tree at the local deadline (tenure
// stopped, killed or suspended), the SIGTERM of an overdue renewal, the
// exit codes that say why, and the re-campaign after a lost lease, which
// never lets two terms' processes live at once. The tests are in
// *_test.go files; they run the tenure binary that e2e.Main builds.
package term
