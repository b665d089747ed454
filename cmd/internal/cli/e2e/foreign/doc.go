// Package foreign holds the end-to-end tests of records tenure did not
// write on a key or a partition group's keys (etcd, PostgreSQL,
// Kubernetes): status, watch, release and run name them and refuse to
// take them over. The tests are in *_test.go files; they run the tenure
// binary that e2e.Main builds.
package foreign
