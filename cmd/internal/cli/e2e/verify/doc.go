// Package verify holds the end-to-end tests of tenure verify: its exit
// codes, its JSON and HTML reports, an unreachable coordinator being
// inconclusive, and the planted bugs it must catch, on a key, on a
// partition group and on Kubernetes. The tests are in *_test.go files;
// they run the tenure binary that e2e.Main builds.
package verify
