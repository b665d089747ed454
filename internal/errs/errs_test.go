package errs_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tenure-dev/tenure/internal/errs"
)

func TestKind(t *testing.T) {
	parent := errors.New("tenure: invalid config")
	sub := errs.Kind("etcd: invalid config", parent)
	err := fmt.Errorf("%w: Config.Endpoints is empty", sub)
	if !errors.Is(err, sub) || !errors.Is(err, parent) {
		t.Fatalf("errors.Is(%v, sub) = %v, (parent) = %v; want both true", err, errors.Is(err, sub), errors.Is(err, parent))
	}
	if got := err.Error(); got != "etcd: invalid config: Config.Endpoints is empty" {
		t.Fatalf("message = %q; want the sub-kind's own message only", got)
	}
	if errors.Is(errors.New("other"), sub) || errors.Is(parent, sub) {
		t.Fatal("an unrelated error, or the parent itself, matched the sub-kind")
	}
}
