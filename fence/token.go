package fence

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/tenure-dev/tenure"
)

// Header is the HTTP header that carries a fencing token: one positive
// base-10 uint64.
const Header = "Fencing-Token"

// TokenSource is where a Transport gets the token to present. *tenure.Term
// satisfies it, and also the optional capabilities Transport looks for:
//
//	Check() error     // refuse to send once the term has ended
//	StepDown(error)   // end the term when a server answers "stale"
//
// Users set Transport.Source to one, usually the *tenure.Term.
type TokenSource interface {
	Token() uint64
}

// ParseToken parses a fencing token as it appears in a Fencing-Token
// header: a positive base-10 integer that fits in a uint64, digits only (no
// sign, no spaces, no fraction). Anything else, 0 included, is reported
// with an error wrapping ErrMalformedToken that quotes the input.
func ParseToken(s string) (uint64, error) {
	t, why := parseToken(s)
	if why != "" {
		return 0, fmt.Errorf("%w: %s", ErrMalformedToken, why)
	}
	return t, nil
}

// parseToken parses s, or says why it is not a token.
func parseToken(s string) (token uint64, why string) {
	if s == "" {
		return 0, "empty value"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, quote(s) + " is not a positive base-10 integer"
		}
	}
	t, err := strconv.ParseUint(s, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Sprintf("%s is larger than the largest token, %d", quote(s), uint64(math.MaxUint64))
	case err != nil: // unreachable for digit strings
		return 0, fmt.Sprintf("%s: %v", quote(s), err)
	case t == 0:
		return 0, quote(s) + " is not a token: tokens start at 1"
	}
	return t, ""
}

// TokenFromHeader returns the fencing token carried by h. It reports an
// error wrapping ErrMissingToken when there is no Fencing-Token header, and
// one wrapping ErrMalformedToken when there is more than one or its value
// is not a valid token (see ParseToken).
func TokenFromHeader(h http.Header) (uint64, error) {
	vs := h.Values(Header)
	switch len(vs) {
	case 0:
		return 0, fmt.Errorf("%w: no %s header", ErrMissingToken, Header)
	case 1:
		t, why := parseToken(vs[0])
		if why != "" {
			return 0, fmt.Errorf("%w in the %s header: %s", ErrMalformedToken, Header, why)
		}
		return t, nil
	default:
		return 0, fmt.Errorf("%w: %d %s headers, want one", ErrMalformedToken, len(vs), Header)
	}
}

type tokenKey struct{}

// TokenFromContext returns the fencing token that Middleware admitted for
// the request whose context is ctx. ok is false outside such a request.
func TokenFromContext(ctx context.Context) (token uint64, ok bool) {
	token, ok = ctx.Value(tokenKey{}).(uint64)
	return token, ok
}

// quote quotes s for an error message, cut short if it is long: header
// values can be large and end up in response bodies.
func quote(s string) string {
	const max = 40
	if len(s) > max {
		return strconv.Quote(s[:max]) + "…"
	}
	return strconv.Quote(s)
}

// *tenure.Term is a TokenSource with both optional capabilities.
var _ interface {
	TokenSource
	Check() error
	StepDown(error)
} = (*tenure.Term)(nil)
