package kube_test

import (
	"testing"

	"github.com/tenure-dev/tenure/internal/leakcheck"
)

func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m)
}
