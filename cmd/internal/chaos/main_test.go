package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/tenure-dev/tenure/internal/raceexit"
)

// nodeModeEnv makes the test binary run as a node process.
const nodeModeEnv = "TENURE_CHAOS_TEST_NODE"

func TestMain(m *testing.M) {
	if spec := os.Getenv(nodeModeEnv); spec != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		s, err := ParseNodeSpec(spec)
		if err == nil {
			err = RunNode(ctx, s, os.Stdin, os.Stdout)
		}
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "node:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	raceexit.Quick() // this binary, run again as a node, exits at once
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/client/pkg/v3/logutil.(*MergeLogger).outputLoop"),
		goleak.IgnoreTopFunction("github.com/anishathalye/porcupine.checkParallel.func1"),
	)
}

// testOptions returns tenure verify's default options, run by test node
// processes, as set changes them.
func testOptions(set func(o *Options)) Options {
	o := DefaultOptions()
	o.NodeCommand = testNodeCommand
	set(&o)
	return o
}

// testNodeCommand re-executes the test binary as a node.
func testNodeCommand(spec string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), nodeModeEnv+"="+spec)
	return cmd
}
