package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runMain(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "speeddoc:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  speeddoc measure -tenure BIN [-out docs/speed.json]
  speeddoc render [-in docs/speed.json] [-out docs/speed.md]
  speeddoc guard -tenure BIN`

func runMain(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	tenureBin := fs.String("tenure", "", "the tenure binary to run")
	in := fs.String("in", "docs/speed.json", "render: the record to read")
	out := fs.String("out", "", "measure: the record to write (default docs/speed.json); render: the page (default docs/speed.md)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if (args[0] == "measure" || args[0] == "guard") && *tenureBin == "" {
		return fmt.Errorf("%s needs -tenure\n%s", args[0], usage)
	}
	switch args[0] {
	case "measure":
		rec, err := measure(ctx, *tenureBin, os.Stderr)
		if err != nil {
			return err
		}
		return rec.write(orDefault(*out, "docs/speed.json"))
	case "render":
		rec, err := readRecord(*in)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := render(&b, rec); err != nil {
			return err
		}
		return os.WriteFile(orDefault(*out, "docs/speed.md"), b.Bytes(), 0o644)
	case "guard":
		return guard(ctx, *tenureBin, os.Stdout, os.Stderr)
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
