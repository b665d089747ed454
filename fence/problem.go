package fence

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
)

// Problem type URIs of the problem details (RFC 9457) that Middleware and
// WriteError send. Each names the documentation of the matching error.
// Users compare a Problem's Type with them in clients of a fenced service.
const (
	ProblemStaleToken     = "https://pkg.go.dev/github.com/tenure-dev/tenure/fence#StaleError"
	ProblemMissingToken   = "https://pkg.go.dev/github.com/tenure-dev/tenure/fence#ErrMissingToken"
	ProblemMalformedToken = "https://pkg.go.dev/github.com/tenure-dev/tenure/fence#ErrMalformedToken"
)

// ProblemContentType is the media type of a problem details body.
const ProblemContentType = "application/problem+json"

// Problem is an RFC 9457 problem details body, with the extension members
// presented and required for a stale token (409 Conflict).
type Problem struct {
	// Type is a URI naming the kind of problem: one of the Problem*
	// constants, or "about:blank" for a plain HTTP status.
	Type string `json:"type"`
	// Title is a short human-readable summary of the kind of problem.
	Title string `json:"title"`
	// Status is the HTTP status code of the response.
	Status int `json:"status"`
	// Detail explains this occurrence (the error message); empty for
	// internal errors, which are not disclosed.
	Detail string `json:"detail,omitempty"`
	// Presented is the token the request carried (stale tokens only).
	Presented uint64 `json:"presented,omitempty"`
	// Required is the lowest token the resource accepts (stale tokens only).
	Required uint64 `json:"required,omitempty"`
}

// ProblemFor maps err to the problem details a server should answer with:
//
//   - a *StaleError: 409 Conflict, type ProblemStaleToken, with presented and
//     required;
//   - ErrMissingToken: 428 Precondition Required, type ProblemMissingToken;
//   - ErrMalformedToken: 400 Bad Request, type ProblemMalformedToken;
//   - a context's end: 503 Service Unavailable;
//   - anything else: 500 Internal Server Error, with no detail, so that
//     internal errors are not disclosed.
func ProblemFor(err error) Problem {
	var stale *StaleError
	switch {
	case errors.As(err, &stale):
		return Problem{
			Type: ProblemStaleToken, Title: "Stale fencing token", Status: http.StatusConflict,
			Detail: stale.Error(), Presented: stale.Presented, Required: stale.Required,
		}
	case errors.Is(err, ErrMissingToken):
		return Problem{
			Type: ProblemMissingToken, Title: "Fencing token required", Status: http.StatusPreconditionRequired,
			Detail: err.Error(),
		}
	case errors.Is(err, ErrMalformedToken):
		return Problem{
			Type: ProblemMalformedToken, Title: "Malformed fencing token", Status: http.StatusBadRequest,
			Detail: err.Error(),
		}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return Problem{
			Type: "about:blank", Title: http.StatusText(http.StatusServiceUnavailable), Status: http.StatusServiceUnavailable,
			Detail: err.Error(),
		}
	default:
		return Problem{
			Type: "about:blank", Title: http.StatusText(http.StatusInternalServerError), Status: http.StatusInternalServerError,
		}
	}
}

// WriteError answers a request with the problem details ProblemFor(err).
func WriteError(w http.ResponseWriter, err error) {
	p := ProblemFor(err)
	body, jerr := json.Marshal(p)
	if jerr != nil { // cannot happen: Problem has only strings and numbers
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", ProblemContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_, _ = w.Write(body)
}
