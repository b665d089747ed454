// Package release holds the end-to-end tests of what a user builds and
// runs first: scripts/release-build.sh's archives and checksums, and
// tenure demo. The tests are in *_test.go files; they run the tenure
// binary that e2e.Main builds.
package release
