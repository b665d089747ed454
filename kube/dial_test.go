package kube_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/freeport"
	"github.com/tenure-dev/tenure/kube"
)

// Dial asks the API server before it returns: with nothing listening at
// rc.Host it fails, naming the host, instead of returning a coordinator
// whose first call would fail.
func TestDialUnreachable(t *testing.T) {
	urls, err := freeport.LocalURLs(1) // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := kube.Dial(ctx, &rest.Config{Host: urls[0]}, "jobs")
	if err == nil {
		c.Close()
		t.Fatalf("Dial(%s, nothing listening) error = nil; want one", urls[0])
	}
	if !strings.Contains(err.Error(), urls[0]) || errors.Is(err, tenure.ErrInvalidConfig) {
		t.Errorf("Dial() error = %v; want a connection error naming %s", err, urls[0])
	}
}

// Dial and New report every bad argument and option before any request.
func TestDialInvalid(t *testing.T) {
	tests := []struct {
		name string
		rc   *rest.Config
		ns   string
		opts []kube.Option
		want []string
	}{
		{"nil rest.Config", nil, "jobs", nil, []string{"nil rest.Config"}},
		{"empty namespace", &rest.Config{Host: "https://127.0.0.1:1"}, "", nil, []string{"namespace is empty"}},
		{"namespace and drift", &rest.Config{Host: "https://127.0.0.1:1"}, "Jobs", []kube.Option{kube.WithMaxDrift(-0.1)},
			[]string{`namespace "Jobs"`, "WithMaxDrift (-0.1)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kube.Dial(t.Context(), tc.rc, tc.ns, tc.opts...)
			if !errors.Is(err, tenure.ErrInvalidConfig) {
				t.Fatalf("Dial() error = %v; want ErrInvalidConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Dial() error = %q; want it to name %q", err, w)
				}
			}
		})
	}
}
