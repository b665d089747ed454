package fence

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseToken: ParseToken accepts exactly the positive base-10 digit
// strings that fit a uint64, agrees with strconv on their value, formats
// back to the same token, and names a bad input in a short error.
func FuzzParseToken(f *testing.F) {
	for _, s := range []string{"1", "42", "007", "0", "", "-1", "+1", " 1", "1 ", "1.0", "0x10", "1_000",
		"18446744073709551615", "18446744073709551616", "99999999999999999999999", "١٢", strings.Repeat("9", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseToken(s)
		digits := s != "" && strings.Trim(s, "0123456789") == ""
		want, werr := strconv.ParseUint(s, 10, 64)
		if err != nil {
			if !errors.Is(err, ErrMalformedToken) {
				t.Fatalf("ParseToken(%q) = %v, not wrapping ErrMalformedToken", s, err)
			}
			if tok != 0 {
				t.Fatalf("ParseToken(%q) returned %d with error %v", s, tok, err)
			}
			if digits && werr == nil && want != 0 {
				t.Fatalf("ParseToken(%q) refused a positive uint64: %v", s, err)
			}
			// The input is quoted cut to 40 bytes, and a byte that is not
			// UTF-8 is quoted as \xNN: at most 4×40 bytes of it, and the
			// reason around it.
			if len(err.Error()) > 4*40+120 {
				t.Fatalf("ParseToken(%d-byte input): %d-byte error, want it cut short", len(s), len(err.Error()))
			}
			return
		}
		if !digits || werr != nil || want != tok || tok == 0 {
			t.Fatalf("ParseToken(%q) = %d; strconv says %d, %v", s, tok, want, werr)
		}
		if back, err := ParseToken(strconv.FormatUint(tok, 10)); err != nil || back != tok {
			t.Fatalf("ParseToken(FormatUint(%d)) = %d, %v", tok, back, err)
		}
		h := http.Header{}
		h.Set(Header, s)
		if got, err := TokenFromHeader(h); err != nil || got != tok {
			t.Fatalf("TokenFromHeader(%s: %q) = %d, %v; ParseToken says %d", Header, s, got, err, tok)
		}
	})
}

// FuzzTokenFromHeader: a request with one Fencing-Token header carries the
// token ParseToken reads from its value, with none or several it carries
// none, and the errors wrap the matching sentinel.
func FuzzTokenFromHeader(f *testing.F) {
	f.Add("17", "", uint8(1))
	f.Add("17", "18", uint8(2))
	f.Add("", "", uint8(0))
	f.Add("0", "", uint8(1))
	f.Add("1,2", "", uint8(1))
	f.Add("x", "1", uint8(2))
	f.Fuzz(func(t *testing.T, a, b string, n uint8) {
		h := http.Header{}
		vals := []string{a, b, a}[:n%4%3]
		for _, v := range vals {
			h.Add(Header, v)
		}
		tok, err := TokenFromHeader(h)
		switch len(vals) {
		case 0:
			if !errors.Is(err, ErrMissingToken) || tok != 0 {
				t.Fatalf("no header: %d, %v; want ErrMissingToken", tok, err)
			}
		case 1:
			want, perr := ParseToken(a)
			if (err == nil) != (perr == nil) || tok != want {
				t.Fatalf("header %q: %d, %v; ParseToken says %d, %v", a, tok, err, want, perr)
			}
			if err != nil && !errors.Is(err, ErrMalformedToken) {
				t.Fatalf("header %q: %v, not wrapping ErrMalformedToken", a, err)
			}
		default:
			if !errors.Is(err, ErrMalformedToken) || tok != 0 {
				t.Fatalf("%d headers: %d, %v; want ErrMalformedToken", len(vals), tok, err)
			}
		}
	})
}

// FuzzStaleFromResponse: Transport reads a stale rejection only from a
// problem body of type ProblemStaleToken that presents the token sent and
// requires a higher one, and whatever the body, the caller still reads it
// whole from its start.
func FuzzStaleFromResponse(f *testing.F) {
	stale, _ := json.Marshal(ProblemFor(&StaleError{Presented: 5, Required: 9}))
	f.Add(ProblemContentType, stale, uint64(5))
	f.Add(ProblemContentType+"; charset=utf-8", stale, uint64(5))
	f.Add(ProblemContentType, stale, uint64(9))
	f.Add("application/json", stale, uint64(5))
	f.Add(ProblemContentType, []byte(`{"type":"`+ProblemStaleToken+`","presented":5,"required":5}`), uint64(5))
	f.Add(ProblemContentType, []byte(`{"type":"`+ProblemStaleToken+`","presented":5,"required":-1}`), uint64(5))
	f.Add(ProblemContentType, []byte(`{"type":"`+ProblemStaleToken+`","presented":5,"required":1e3}`), uint64(5))
	f.Add(ProblemContentType, []byte(`not json`), uint64(5))
	f.Add(";;", []byte(`{}`), uint64(0))
	f.Fuzz(func(t *testing.T, contentType string, body []byte, token uint64) {
		resp := &http.Response{StatusCode: http.StatusConflict, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body))}
		resp.Header.Set("Content-Type", contentType)
		se := staleFromResponse(resp, token)
		got, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("body after staleFromResponse: %q, %v; want %q", got, err, body)
		}
		if se == nil {
			return
		}
		var p Problem
		if json.Unmarshal(body, &p) != nil || p.Type != ProblemStaleToken {
			t.Fatalf("stale rejection %+v read from a body that is no stale-token problem: %q", se, body)
		}
		if se.Presented != token || se.Required <= token || se.Required != p.Required {
			t.Fatalf("stale rejection %+v for token %d from %q", se, token, body)
		}
	})
}

// FuzzWriteError: the problem body WriteError sends decodes to ProblemFor
// of the same error, for any stale rejection and any token error message.
func FuzzWriteError(f *testing.F) {
	f.Add(uint8(0), uint64(5), uint64(9), "")
	f.Add(uint8(1), uint64(0), uint64(0), "no header")
	f.Add(uint8(2), uint64(0), uint64(0), "\"\xff</script>\u2028")
	f.Add(uint8(3), uint64(0), uint64(0), "internal: secret")
	f.Fuzz(func(t *testing.T, kind uint8, presented, required uint64, msg string) {
		var err error
		switch kind % 4 {
		case 0:
			err = &StaleError{Presented: presented, Required: required}
		case 1:
			err = errors.Join(ErrMissingToken, errors.New(msg))
		case 2:
			err = errors.Join(ErrMalformedToken, errors.New(msg))
		default:
			err = errors.New(msg)
		}
		want := ProblemFor(err)
		w := httptest.NewRecorder()
		WriteError(w, err)
		if w.Code != want.Status || w.Header().Get("Content-Type") != ProblemContentType {
			t.Fatalf("WriteError(%v): status %d, Content-Type %q; want %d, %q", err, w.Code, w.Header().Get("Content-Type"), want.Status, ProblemContentType)
		}
		if cl := w.Header().Get("Content-Length"); cl != strconv.Itoa(w.Body.Len()) {
			t.Fatalf("WriteError(%v): Content-Length %s for a %d-byte body", err, cl, w.Body.Len())
		}
		var got Problem
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatalf("WriteError body %q: %v", w.Body.Bytes(), err)
		}
		// JSON carries strings as valid UTF-8: compare what survives it.
		want.Detail = string([]rune(want.Detail))
		if got != want {
			t.Fatalf("WriteError(%v) body decodes to %+v, want %+v", err, got, want)
		}
		if kind%4 == 3 && got.Detail != "" {
			t.Fatalf("WriteError disclosed an internal error: %s", w.Body.Bytes())
		}
	})
}
