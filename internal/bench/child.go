package bench

import (
	"context"
	"io"
)

// childEnv, when set in a test binary's environment, holds a child spec.
const childEnv = "TENURE_BENCH_CHILD"

// RunChild is a failover contender process: see failover.go.
func RunChild(ctx context.Context, spec string, out io.Writer) int { return 0 }
