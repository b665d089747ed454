package kube_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tenure-dev/tenure/kube"
)

func TestLeaseName(t *testing.T) {
	cases := []struct {
		key    string
		exact  bool   // the key is its own name
		prefix string // else the name starts so
	}{
		{"scheduler", true, ""},
		{"my-controller", true, ""},
		{"kube-system.leader", true, ""},
		{"orders/17", false, "orders-17-"},
		{"Scheduler", false, "scheduler-"},
		{"a_b", false, "a-b-"},
		{"-x", false, "x-"},
		{"x.", false, "x-"},
		{"__", false, ""},
		{"A//B", false, "a-b-"},
		{strings.Repeat("k", 200), true, ""},
		{strings.Repeat("K", 200), false, strings.Repeat("k", 100) + "-"},
	}
	seen := map[string]string{}
	for _, tc := range cases {
		name := kube.LeaseName(tc.key)
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			t.Errorf("LeaseName(%q) = %q: not a valid Lease name: %v", tc.key, name, msgs)
		}
		if tc.exact && name != tc.key {
			t.Errorf("LeaseName(%q) = %q; want the key itself (a valid Lease name)", tc.key, name)
		}
		if !tc.exact && (name == tc.key || !strings.HasPrefix(name, tc.prefix) || len(name) != len(tc.prefix)+16) {
			t.Errorf("LeaseName(%q) = %q; want %q followed by 16 hex digits", tc.key, name, tc.prefix)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("LeaseName(%q) = LeaseName(%q) = %q", tc.key, other, name)
		}
		seen[name] = tc.key
		if again := kube.LeaseName(tc.key); again != name {
			t.Errorf("LeaseName(%q) = %q, then %q; want the same name each time", tc.key, name, again)
		}
	}
	// Keys that differ only where the name cannot show it get other names.
	if a, b := kube.LeaseName("Orders/1"), kube.LeaseName("orders/1"); a == b {
		t.Errorf("LeaseName(Orders/1) = LeaseName(orders/1) = %q", a)
	}
}
