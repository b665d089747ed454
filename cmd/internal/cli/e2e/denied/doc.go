// Package denied holds the end-to-end tests of coordinators that refuse
// tenure: wrong or missing etcd credentials, and etcd roles or Kubernetes
// RBAC that let a user read but not write, each a permission error (77)
// naming what was denied instead of a campaign for ever. The tests are in
// *_test.go files; they run the tenure binary that e2e.Main builds.
package denied
