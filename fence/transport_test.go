package fence_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
)

// fakeTerm is a TokenSource with Check and StepDown, like *tenure.Term.
type fakeTerm struct {
	token uint64

	mu      sync.Mutex
	ended   error
	stepped []error
}

func (f *fakeTerm) Token() uint64 { return f.token }

func (f *fakeTerm) Check() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ended
}

func (f *fakeTerm) StepDown(cause error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stepped = append(f.stepped, cause)
	if f.ended == nil {
		f.ended = errors.Join(tenure.ErrNotLeader, cause)
	}
}

func (f *fakeTerm) stepDowns() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.stepped...)
}

// tokenOnly is a TokenSource without the optional capabilities.
type tokenOnly uint64

func (t tokenOnly) Token() uint64 { return uint64(t) }

// roundTripFunc is a base transport that answers with a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// trackingBody records whether it was closed.
type trackingBody struct {
	io.Reader
	closed bool
}

func (b *trackingBody) Close() error { b.closed = true; return nil }

func response(status int, contentType, body string) *http.Response {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return &http.Response{StatusCode: status, Header: h, Body: &trackingBody{Reader: strings.NewReader(body)}}
}

func TestTransportStampsTokenOnAClone(t *testing.T) {
	var sent *http.Request
	tr := &fence.Transport{
		Source: &fakeTerm{token: 42},
		Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			sent = r
			return response(200, "text/plain", "ok"), nil
		}),
	}
	req := httptest.NewRequest(http.MethodPut, "http://resource/x", nil)
	req.Header.Set(fence.Header, "7") // a stale header set by the caller is replaced
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip() = %v", err)
	}
	resp.Body.Close()
	if got := sent.Header.Values(fence.Header); len(got) != 1 || got[0] != "42" {
		t.Errorf("sent %s = %q; want [\"42\"]", fence.Header, got)
	}
	if sent == req {
		t.Error("RoundTrip sent the caller's request; want a clone")
	}
	if got := req.Header.Get(fence.Header); got != "7" {
		t.Errorf("caller's request header changed to %q; want it untouched (\"7\")", got)
	}
}

func TestTransportRefusesToSend(t *testing.T) {
	tests := []struct {
		name   string
		source fence.TokenSource
		want   error
	}{
		{"term ended", &fakeTerm{token: 3, ended: tenure.ErrNotLeader}, tenure.ErrNotLeader},
		{"token 0", tokenOnly(0), fence.ErrMissingToken},
		{"no source", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls int
			tr := &fence.Transport{
				Source: tc.source,
				Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
					calls++
					return response(200, "", ""), nil
				}),
			}
			body := &trackingBody{Reader: strings.NewReader("payload")}
			req := httptest.NewRequest(http.MethodPost, "http://resource/x", body)
			resp, err := tr.RoundTrip(req)
			if resp != nil || err == nil {
				t.Fatalf("RoundTrip() = %v, %v; want nil, an error", resp, err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("RoundTrip() error = %v; want it to match %v", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "fence: ") {
				t.Errorf("error %q does not start with \"fence: \"", err)
			}
			if calls != 0 {
				t.Errorf("base transport called %d times; want 0", calls)
			}
			if !body.closed {
				t.Error("request body not closed on error (RoundTripper contract)")
			}
		})
	}
}

const staleBody = `{"type":"` + fence.ProblemStaleToken + `","title":"Stale fencing token","status":409,"detail":"x","presented":5,"required":9}`

func TestTransportConflict(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		body        string
		wantStale   bool
	}{
		{"stale problem", "application/problem+json", staleBody, true},
		{"stale problem with charset", "application/problem+json; charset=utf-8", staleBody, true},
		{"other problem type", "application/problem+json", strings.Replace(staleBody, fence.ProblemStaleToken, "https://example.com/conflict", 1), false},
		{"another token presented", "application/problem+json", strings.Replace(staleBody, `"presented":5`, `"presented":4`, 1), false},
		{"required not newer", "application/problem+json", strings.Replace(staleBody, `"required":9`, `"required":5`, 1), false},
		{"plain JSON", "application/json", staleBody, false},
		{"not JSON", "application/problem+json", "conflict!", false},
		{"huge body", "application/problem+json", staleBody + strings.Repeat(" ", 70<<10), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeTerm{token: 5}
			tr := &fence.Transport{
				Source: src,
				Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
					return response(http.StatusConflict, tc.contentType, tc.body), nil
				}),
			}
			resp, err := tr.RoundTrip(httptest.NewRequest(http.MethodPut, "http://resource/x", nil))
			if err != nil {
				t.Fatalf("RoundTrip() = %v; want the response", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != tc.body {
				t.Errorf("body read after RoundTrip has %d bytes; want the %d bytes sent", len(body), len(tc.body))
			}
			if resp.StatusCode != http.StatusConflict {
				t.Errorf("StatusCode = %d; want 409", resp.StatusCode)
			}
			steps := src.stepDowns()
			if !tc.wantStale {
				if len(steps) != 0 {
					t.Errorf("StepDown called with %v; want no call", steps)
				}
				return
			}
			if len(steps) != 1 {
				t.Fatalf("StepDown called %d times; want once", len(steps))
			}
			var se *fence.StaleError
			if !errors.As(steps[0], &se) || se.Presented != 5 || se.Required != 9 {
				t.Errorf("StepDown(%v); want a *StaleError{Presented: 5, Required: 9}", steps[0])
			}
			if !errors.Is(steps[0], tenure.ErrStaleToken) {
				t.Errorf("StepDown cause %v does not match tenure.ErrStaleToken", steps[0])
			}
			// The term has ended: the next request is not sent.
			if _, err := tr.RoundTrip(httptest.NewRequest(http.MethodPut, "http://resource/x", nil)); !errors.Is(err, tenure.ErrNotLeader) {
				t.Errorf("RoundTrip() after the stale answer = %v; want ErrNotLeader", err)
			}
		})
	}
}

func TestTransportErrOnStale(t *testing.T) {
	src := &fakeTerm{token: 5}
	var body *trackingBody
	tr := &fence.Transport{
		Source:     src,
		ErrOnStale: true,
		Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp := response(http.StatusConflict, fence.ProblemContentType, staleBody)
			body = resp.Body.(*trackingBody)
			return resp, nil
		}),
	}
	resp, err := tr.RoundTrip(httptest.NewRequest(http.MethodPut, "http://resource/x", nil))
	var se *fence.StaleError
	if resp != nil || !errors.As(err, &se) || se.Required != 9 {
		t.Fatalf("RoundTrip() = %v, %v; want nil, *StaleError requiring 9", resp, err)
	}
	if !body.closed {
		t.Error("response body not closed when returning the stale error")
	}
	if len(src.stepDowns()) != 1 {
		t.Errorf("StepDown called %d times; want once", len(src.stepDowns()))
	}
}

func TestTransportWithoutStepDown(t *testing.T) {
	tr := &fence.Transport{
		Source: tokenOnly(5),
		Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return response(http.StatusConflict, fence.ProblemContentType, staleBody), nil
		}),
		ErrOnStale: true,
	}
	_, err := tr.RoundTrip(httptest.NewRequest(http.MethodGet, "http://resource/x", nil))
	if !errors.Is(err, tenure.ErrStaleToken) {
		t.Errorf("RoundTrip() = %v; want a stale error", err)
	}
}

// TestEndToEnd runs a Register behind Middleware on a real HTTP server and
// two clients whose terms have tokens 5 and 7: once 7 has written, 5 is
// refused with 409, its term steps down, and it sends nothing more.
func TestEndToEnd(t *testing.T) {
	reg := fence.NewRegister[string]()
	srv := httptest.NewServer(fence.Middleware(fence.New(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := fence.TokenFromContext(r.Context())
		b, _ := io.ReadAll(r.Body)
		if err := reg.Write(tok, string(b)); err != nil {
			fence.WriteError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})))
	defer srv.Close()

	old, cur := &fakeTerm{token: 5}, &fakeTerm{token: 7}
	client := func(src *fakeTerm, errOnStale bool) *http.Client {
		return &http.Client{Transport: &fence.Transport{Base: srv.Client().Transport, Source: src, ErrOnStale: errOnStale}}
	}
	put := func(c *http.Client, body string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return c.Do(req)
	}

	resp, err := put(client(old, false), "from 5")
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT with 5 = %v, %v; want 204", resp, err)
	}
	resp.Body.Close()
	resp, err = put(client(cur, false), "from 7")
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT with 7 = %v, %v; want 204", resp, err)
	}
	resp.Body.Close()

	resp, err = put(client(old, false), "stale 5")
	if err != nil {
		t.Fatalf("PUT with 5 after 7 = %v; want a 409 response", err)
	}
	var p struct {
		Presented, Required uint64
		Status              int
	}
	decodeErr := json.NewDecoder(resp.Body).Decode(&p)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || decodeErr != nil || p.Presented != 5 || p.Required != 7 || p.Status != 409 {
		t.Errorf("PUT with 5 after 7: status %d, problem %+v (%v); want 409 presented 5 required 7", resp.StatusCode, p, decodeErr)
	}
	if steps := old.stepDowns(); len(steps) != 1 || !errors.Is(steps[0], tenure.ErrStaleToken) {
		t.Errorf("old term StepDown calls = %v; want one stale error", steps)
	}
	if _, err := put(client(old, true), "again"); !errors.Is(err, tenure.ErrNotLeader) {
		t.Errorf("PUT with the stepped-down term = %v; want ErrNotLeader, nothing sent", err)
	}
	// A client with ErrOnStale sees the stale error through http.Client.
	if _, err := put(client(&fakeTerm{token: 6}, true), "six"); !errors.Is(err, tenure.ErrStaleToken) {
		t.Errorf("PUT with 6, ErrOnStale = %v; want an error matching tenure.ErrStaleToken", err)
	}
	if v, tok := reg.Read(); v != "from 7" || tok != 7 {
		t.Errorf("register = %q, %d; want \"from 7\", 7", v, tok)
	}
	if st := reg.Stats(); st.Accepted != 2 {
		t.Errorf("register Stats() = %+v; want 2 accepted (stale requests stopped at the middleware)", st)
	}
}
