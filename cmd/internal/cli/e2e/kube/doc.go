// Package kube holds the end-to-end tests of tenure against a real
// kube-apiserver as a cluster's users meet it: the examples under
// examples/kubernetes applied as written, a Deployment's pods taking over
// from each other, and the RBAC verbs status needs. The tests are in
// *_test.go files; they run the tenure binary that e2e.Main builds.
package kube
