package fence_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
)

func ExampleRegister() {
	reg := fence.NewRegister[string]()

	fmt.Println(reg.Write(7, "written by term 7"))
	fmt.Println(reg.Write(7, "term 7 again")) // equal: the same term writes again
	err := reg.Write(5, "written by term 5")  // a deposed leader
	fmt.Println(err)
	fmt.Println(errors.Is(err, tenure.ErrStaleToken))

	value, token := reg.Read()
	fmt.Printf("%q at %d, %+v\n", value, token, reg.Stats())
	// Output:
	// <nil>
	// <nil>
	// fence: stale fencing token 5: 7 or newer required
	// true
	// "term 7 again" at 7, {Accepted:2 Rejected:1}
}

func ExampleFence() {
	// Guard a resource of your own: admit the token right before acting.
	f := fence.New()
	for _, token := range []uint64{3, 4, 2, 0} {
		if err := f.Admit(token); err != nil {
			fmt.Println("refused:", err)
			continue
		}
		fmt.Println("acting with", token)
	}
	// Output:
	// acting with 3
	// acting with 4
	// refused: fence: stale fencing token 2: 4 or newer required
	// refused: fence: missing fencing token: token 0 is never granted
}

func ExampleMiddleware() {
	h := fence.Middleware(fence.New(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := fence.TokenFromContext(r.Context())
		fmt.Fprintf(w, "accepted %d\n", token)
	}))

	for _, token := range []string{"8", "6", "abc", ""} {
		req := httptest.NewRequest(http.MethodPost, "/jobs", nil)
		if token != "" {
			req.Header.Set(fence.Header, token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%d %s %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	// Output:
	// 200 text/plain; charset=utf-8 accepted 8
	// 409 application/problem+json {"type":"https://pkg.go.dev/github.com/tenure-dev/tenure/fence#StaleError","title":"Stale fencing token","status":409,"detail":"fence: stale fencing token 6: 8 or newer required","presented":6,"required":8}
	// 400 application/problem+json {"type":"https://pkg.go.dev/github.com/tenure-dev/tenure/fence#ErrMalformedToken","title":"Malformed fencing token","status":400,"detail":"fence: malformed fencing token in the Fencing-Token header: \"abc\" is not a positive base-10 integer"}
	// 428 application/problem+json {"type":"https://pkg.go.dev/github.com/tenure-dev/tenure/fence#ErrMissingToken","title":"Fencing token required","status":428,"detail":"fence: missing fencing token: no Fencing-Token header"}
}

// exampleTerm stands in for the *tenure.Term an Elector hands its leader.
type exampleTerm struct {
	token uint64
	ended error
}

func (t *exampleTerm) Token() uint64 { return t.token }
func (t *exampleTerm) Check() error  { return t.ended }
func (t *exampleTerm) StepDown(cause error) {
	fmt.Println("stepping down:", cause)
	t.ended = fmt.Errorf("%w: %w", tenure.ErrNotLeader, cause)
}

func ExampleTransport() {
	reg := fence.NewRegister[string]()
	srv := httptest.NewServer(fence.Middleware(fence.New(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := fence.TokenFromContext(r.Context())
		body, _ := io.ReadAll(r.Body)
		if err := reg.Write(token, string(body)); err != nil {
			fence.WriteError(w, err)
		}
	})))
	defer srv.Close()

	put := func(term *exampleTerm, body string) {
		client := &http.Client{Transport: &fence.Transport{Base: srv.Client().Transport, Source: term}}
		resp, err := client.Post(srv.URL, "text/plain", strings.NewReader(body))
		if err != nil {
			fmt.Println("error:", errors.Unwrap(err)) // unwrap the *url.Error naming the URL
			return
		}
		resp.Body.Close()
		fmt.Println(resp.Status)
	}

	old, next := &exampleTerm{token: 1}, &exampleTerm{token: 2}
	put(old, "a")
	put(next, "b") // a new leader takes over
	put(old, "c")  // the old leader is fenced out and steps down
	put(old, "d")  // and sends nothing more
	fmt.Println(reg.Read())
	// Output:
	// 200 OK
	// 200 OK
	// stepping down: fence: stale fencing token 1: 2 or newer required
	// 409 Conflict
	// error: fence: not sending POST request: tenure: not leader: fence: stale fencing token 1: 2 or newer required
	// b 2
}
