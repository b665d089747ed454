package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// defaultChoice is what chose etcd at the default --endpoints.
const defaultChoice = "default (no --endpoints, --postgres, --kubeconfig or --namespace)"

// choice says what in fs chose the coordinator: the flag or environment
// twin that names it ("--postgres", "TENURE_KUBECONFIG (--kubeconfig)"),
// or defaultChoice. Variables of other tools (KUBECONFIG, PGHOST, …) never
// choose it: two processes that differ only in those pick the same one.
func (f *coordinatorFlags) choice(fs *pflag.FlagSet) string {
	switch {
	case f.postgres != "":
		return flagSetRef(fs, "postgres")
	case f.kubeconfig != "":
		return flagSetRef(fs, "kubeconfig")
	case f.namespace != "":
		return flagSetRef(fs, "namespace") + " without --kubeconfig: the pod's service account"
	}
	if fl := fs.Lookup("endpoints"); fl != nil && fl.Changed {
		return flagSetRef(fs, "endpoints")
	}
	return defaultChoice
}

// announce logs, once as a command starts, the coordinator it uses
// (where: "etcd at URL") and what chose it, and keeps where for the
// output of status and watch. When the default chose etcd in an
// environment that points at Kubernetes, the line is a warning that says
// how to use Kubernetes instead.
func (f *coordinatorFlags) announce(ctx context.Context, log *slog.Logger, where string) {
	f.chosen = where
	by := f.chosenBy
	if by == "" {
		by = "flags"
	}
	attrs := []any{"coordinator", where, "chosen_by", by}
	level := slog.LevelInfo
	if by == defaultChoice {
		if note := kubeEnvNote(os.Getenv); note != "" {
			level, attrs = slog.LevelWarn, append(attrs, "note", note)
		}
	}
	log.Log(ctx, level, "using coordinator", attrs...)
}

// kubeEnvNote says how to use Kubernetes when getenv shows a kubeconfig
// (KUBECONFIG) or a pod (KUBERNETES_SERVICE_HOST), which tenure does not
// follow by itself; "" when it shows neither.
func kubeEnvNote(getenv func(string) string) string {
	if kc := getenv("KUBECONFIG"); kc != "" {
		file := kc
		if strings.Contains(kc, string(os.PathListSeparator)) {
			file = "FILE"
		}
		return fmt.Sprintf("KUBECONFIG is set, but tenure does not follow it: give --kubeconfig %s (or TENURE_KUBECONFIG) to use that cluster's Leases", file)
	}
	if getenv("KUBERNETES_SERVICE_HOST") != "" {
		return "this is a Kubernetes pod, but tenure uses its service account only when asked: give --namespace NAMESPACE (or TENURE_NAMESPACE) to use the Leases of the pod's cluster"
	}
	return ""
}
