package fence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
)

// maxProblemBody bounds how much of a 409 response body Transport reads to
// find out whether it reports a stale token.
const maxProblemBody = 64 << 10

// Transport is an http.RoundTripper that presents a fencing token with every
// request. For each request it:
//
//  1. refuses to send, returning the error, when Source has a Check() error
//     method that reports an error: a term that has ended sends nothing;
//  2. sets the Fencing-Token header to Source.Token() on a clone of the
//     request (the caller's request is never modified); a token of 0 is
//     refused with an error wrapping ErrMissingToken;
//  3. sends it with Base;
//  4. on a 409 Conflict whose problem body (ProblemContentType) has type
//     ProblemStaleToken and presents the token that was sent, calls
//     Source.StepDown with the *StaleError when Source has a StepDown(error)
//     method, so that an elector steps down at once ("fenced by resource").
//     The response is then returned as it came, its body still readable from
//     the start, unless ErrOnStale is set.
//
// *tenure.Term is a suitable Source. A Transport is safe for concurrent use
// if Base is.
type Transport struct {
	// Base sends the requests. Nil means http.DefaultTransport.
	Base http.RoundTripper

	// Source gives the token to present. Required.
	Source TokenSource

	// ErrOnStale makes RoundTrip return a stale rejection as an error: the
	// *StaleError, with a nil response whose body has been closed. An
	// http.Client wraps it in a *url.Error, through which errors.Is(err,
	// tenure.ErrStaleToken) and errors.As(err, **StaleError) still work.
	ErrOnStale bool
}

var _ http.RoundTripper = (*Transport)(nil)

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.Source == nil {
		closeBody(req)
		return nil, errors.New("fence: Transport.Source is nil")
	}
	if c, ok := t.Source.(interface{ Check() error }); ok {
		if err := c.Check(); err != nil {
			closeBody(req)
			return nil, fmt.Errorf("fence: not sending %s request: %w", req.Method, err)
		}
	}
	token := t.Source.Token()
	if token == 0 {
		closeBody(req)
		return nil, fmt.Errorf("%w: token source returned token 0", ErrMissingToken)
	}
	out := req.Clone(req.Context())
	out.Header.Set(Header, strconv.FormatUint(token, 10))

	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(out)
	if err != nil || resp.StatusCode != http.StatusConflict {
		return resp, err
	}
	stale := staleFromResponse(resp, token)
	if stale == nil {
		return resp, nil
	}
	if s, ok := t.Source.(interface{ StepDown(error) }); ok {
		s.StepDown(stale)
	}
	if t.ErrOnStale {
		resp.Body.Close()
		return nil, stale
	}
	return resp, nil
}

// staleFromResponse returns the stale rejection a 409 response reports for
// token, or nil if it reports something else. It reads at most
// maxProblemBody bytes of the body and puts them back in front of the rest.
func staleFromResponse(resp *http.Response, token uint64) *StaleError {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != ProblemContentType || resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxProblemBody+1))
	resp.Body = &rereadBody{Reader: io.MultiReader(bytes.NewReader(head), resp.Body), Closer: resp.Body}
	if len(head) > maxProblemBody {
		return nil
	}
	var p Problem
	if json.Unmarshal(head, &p) != nil {
		return nil
	}
	if p.Type != ProblemStaleToken || p.Presented != token || p.Required <= token {
		return nil
	}
	return &StaleError{Presented: p.Presented, Required: p.Required}
}

// rereadBody is a response body whose first bytes were read already and
// are served again.
type rereadBody struct {
	io.Reader
	io.Closer
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
