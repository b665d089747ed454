package cli

import (
	"strings"
	"testing"
)

// TestKubeEnvNote: the hint names the kubeconfig file, or FILE for a list.
func TestKubeEnvNote(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, ""},
		{map[string]string{"KUBECONFIG": "/a"}, "--kubeconfig /a "},
		{map[string]string{"KUBECONFIG": "/a:/b"}, "--kubeconfig FILE "},
		{map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, "--namespace NAMESPACE"},
	} {
		got := kubeEnvNote(env(tc.env))
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("kubeEnvNote(%v) = %q; want it to say %q", tc.env, got, tc.want)
		}
	}
}
