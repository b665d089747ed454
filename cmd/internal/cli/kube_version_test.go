package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/kubetest"
	"github.com/tenure-dev/tenure/kube"
	"k8s.io/client-go/kubernetes"
)

// TestKubeVersionRefused: an API server older than 1.35, whose
// resourceVersions are not guaranteed comparable, is refused by name. The
// server is real; its /version answer is rewritten on the way back, as a
// fault below the client. Its true version (1.37) passes.
func TestKubeVersionRefused(t *testing.T) {
	t.Parallel()
	s := kubetest.Start(t)
	f := &coordinatorFlags{dialTimeout: 30 * time.Second}
	for _, tc := range []struct {
		minor   string
		refused bool
	}{{"", false}, {"34", true}, {"34+", true}} {
		cfg := s.Config(kubetest.Admin)
		if tc.minor != "" {
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return minorVersion{rt, tc.minor} })
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		err = checkKubeVersion(t.Context(), cs, cfg.Host, f)
		switch {
		case tc.refused && (!errors.Is(err, kube.ErrIncomparable) || !strings.Contains(err.Error(), "version 1."+tc.minor) || !strings.Contains(err.Error(), "1.35 or newer")):
			t.Errorf("minor %q: error = %v; want kube.ErrIncomparable naming the version and 1.35", tc.minor, err)
		case !tc.refused && err != nil:
			t.Errorf("the server's own version: error = %v; want nil", err)
		}
	}
}

// minorVersion rewrites the minor version in /version answers.
type minorVersion struct {
	rt    http.RoundTripper
	minor string
}

func (m minorVersion) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := m.rt.RoundTrip(req)
	if err != nil || req.URL.Path != "/version" {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	v["minor"] = m.minor
	b, _ = json.Marshal(v)
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	resp.Header.Del("Content-Length")
	return resp, nil
}
