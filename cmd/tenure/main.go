// Command tenure is leader election that stays safe when a leader goes
// stale: run a command only while it leads, serve an embedded coordinator,
// inspect and watch leadership, and verify safety under faults.
//
// Run "tenure --help" for the commands.
package main

import (
	"context"
	"os"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
)

func main() {
	ctx, stop := cli.NotifyContext(context.Background())
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
