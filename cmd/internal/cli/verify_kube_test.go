package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// verify on Kubernetes: --kubeconfig (with --namespace) and
// --kube-apiserver reach the run's options; combinations that cannot run
// are refused naming the flags.
func TestVerifyKubeOptions(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kube-apiserver")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kubeconfig, namespace string
		args                  []string
		want                  string // in the error, or "" for none
	}{
		{"kc", "jobs", nil, ""},
		{"kc", "", nil, ""},
		{"", "", []string{"--kube-apiserver", bin, "--members", "3"}, ""},
		{"", "jobs", nil, "--namespace (jobs) applies to --kubeconfig only"},
		{"", "jobs", []string{"--kube-apiserver", bin}, "--namespace (jobs) applies to --kubeconfig only"},
		{"kc", "", []string{"--kube-apiserver", bin}, "--kubeconfig and --kube-apiserver are exclusive"},
		{"kc", "", []string{"--members", "3"}, "--members (3) applies to the embedded coordinator only"},
		{"kc", "Not_A_Namespace", nil, `--namespace "Not_A_Namespace" is not a namespace name`},
		{"", "", []string{"--kube-apiserver", bin + ".absent"}, "--kube-apiserver: stat " + bin + ".absent"},
	} {
		t.Run(fmt.Sprint(tc.kubeconfig, tc.namespace, tc.args), func(t *testing.T) {
			cmd, f := parseVerify(t, tc.args...)
			var g globalFlags
			g.coord.kubeconfig, g.coord.namespace = tc.kubeconfig, tc.namespace
			o, err := f.options(cmd, &g)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("options = %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("options error = %v; want one containing %q", err, tc.want)
			case tc.want == "" && (o.Kubeconfig != tc.kubeconfig || o.Namespace != tc.namespace || (len(tc.args) > 0 && o.KubeAPIServer != bin)):
				t.Errorf("options: kubeconfig %q, namespace %q, kube-apiserver %q; want the flags'", o.Kubeconfig, o.Namespace, o.KubeAPIServer)
			}
		})
	}
}

// On an API server verify did not start, the header says, on its first
// line, that the apiserver family cannot strike, and names the server.
func TestVerifyKubeHeader(t *testing.T) {
	cmd, f := parseVerify(t, "--seed", "3")
	var g globalFlags
	g.coord.kubeconfig, g.coord.namespace = "kc", "jobs"
	o, err := f.options(cmd, &g)
	if err != nil {
		t.Fatal(err)
	}
	got := verifyHeader(cmd, *f, o)
	for _, want := range []string{
		"faults partition,blackhole,latency,reset,pause,crash,degrade,clock (no apiserver faults: verify restarts only an API server it started, with --kube-apiserver)",
		"coordinator Kubernetes API server of --kubeconfig kc, namespace jobs",
	} {
		if !strings.Contains(got, want) || strings.Contains(got, "\n") {
			t.Errorf("header %q; want one line with %q", got, want)
		}
	}
}
