// Package partitions holds the end-to-end tests of tenure run
// --partitions: each partition's command runs on one member at a time,
// members share the partitions out and take over a crashed member's, and a
// member that asks for another count is refused. The tests are in
// *_test.go files; they run the tenure binary that e2e.Main builds.
package partitions
