package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/internal/history"
)

const (
	// headerClaimedToken carries the writer's token on every write, for the
	// record only: the fenced path reads the token from fence.Header.
	headerClaimedToken = "Tenure-Claimed-Token"
	// headerValue names the value written, so that rejected writes can be
	// matched with their writers.
	headerValue = "Tenure-Write"
)

// maxResources bounds the per-partition resources one Register creates.
const maxResources = 4096

// resource is one fenced value of the register: the single one ("") or a
// partition's.
type resource struct {
	fenced http.Handler // fence.Middleware over its own fence
	value  string
	token  uint64
}

// Register is the fenced HTTP register that tenure verify's nodes and the
// end-to-end tests' commands write to: an HTTP server on loopback that
// records every decision. PUT or POST /fenced is guarded by fence.Middleware
// (serialized, so that the token check and the store are one step); PUT
// /unfenced stores anything, as a resource without fencing would (only the
// no-token plant uses it); GET /read returns the value and its token. The
// value written is the Tenure-Write header, or the request body when the
// header is absent.
//
// Each partition of a partitioned run has a resource of its own, with its
// own fence, under /p/NAME/ (PUT or POST /p/NAME/fenced, PUT
// /p/NAME/unfenced, GET /p/NAME/read), created on first use.
type Register struct {
	ln  net.Listener
	srv *http.Server

	mu        sync.Mutex
	res       map[string]*resource // by partition name; "" is the single one
	seq       uint64
	decisions []history.Decision
	done      chan struct{}
}

// StartRegister starts a register service on a free loopback port.
func StartRegister() (*Register, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: register: %w", err)
	}
	r := &Register{ln: ln, res: map[string]*resource{}, done: make(chan struct{})}
	mux := http.NewServeMux()
	for _, prefix := range []string{"", "/p/{partition}"} {
		mux.Handle("PUT "+prefix+"/fenced", r.recordRejections(http.HandlerFunc(r.fenced)))
		mux.Handle("POST "+prefix+"/fenced", r.recordRejections(http.HandlerFunc(r.fenced)))
		mux.HandleFunc("PUT "+prefix+"/unfenced", r.storeUnfenced)
		mux.HandleFunc("GET "+prefix+"/read", r.read)
	}
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln)
	}()
	return r, nil
}

// Addr is the service's address, host:port.
func (r *Register) Addr() string { return r.ln.Addr().String() }

// Close stops the service.
func (r *Register) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	if err != nil {
		r.srv.Close()
	}
	<-r.done
	if errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// Decisions returns every decision so far, in order.
func (r *Register) Decisions() []history.Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]history.Decision(nil), r.decisions...)
}

// counts returns how many writes were accepted and rejected so far.
func (r *Register) counts() (accepted, rejected int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.decisions {
		if d.Accepted {
			accepted++
		} else {
			rejected++
		}
	}
	return accepted, rejected
}

func (r *Register) decideLocked(d history.Decision) {
	r.seq++
	d.Seq = r.seq
	d.At = Mono()
	r.decisions = append(r.decisions, d)
}

// resource returns the request's resource, creating it on first use; nil
// when the register has created as many as it may.
func (r *Register) resource(req *http.Request) (name string, res *resource) {
	name = req.PathValue("partition")
	r.mu.Lock()
	defer r.mu.Unlock()
	if res = r.res[name]; res != nil || len(r.res) >= maxResources {
		return name, res
	}
	res = &resource{}
	res.fenced = fence.Middleware(fence.New(), http.HandlerFunc(r.store), fence.Serialize())
	r.res[name] = res
	return name, res
}

// fenced passes a write to its resource's fence.
func (r *Register) fenced(w http.ResponseWriter, req *http.Request) {
	if _, res := r.resource(req); res != nil {
		res.fenced.ServeHTTP(w, req)
		return
	}
	http.Error(w, fmt.Sprintf("chaos: register: more than %d partitions", maxResources), http.StatusBadRequest)
}

// store runs once the middleware admitted the request's token.
func (r *Register) store(w http.ResponseWriter, req *http.Request) {
	token, _ := fence.TokenFromContext(req.Context())
	r.accept(w, req, token, "fenced")
}

// storeUnfenced stores any write, with the token it claims.
func (r *Register) storeUnfenced(w http.ResponseWriter, req *http.Request) {
	token, _ := strconv.ParseUint(req.Header.Get(headerClaimedToken), 10, 64)
	r.accept(w, req, token, "unfenced")
}

// accept stores the request's value and token in its resource and records
// the decision.
func (r *Register) accept(w http.ResponseWriter, req *http.Request, token uint64, path string) {
	name, res := r.resource(req)
	if res == nil {
		http.Error(w, fmt.Sprintf("chaos: register: more than %d partitions", maxResources), http.StatusBadRequest)
		return
	}
	value := valueOf(req)
	r.mu.Lock()
	res.value, res.token = value, token
	r.decideLocked(history.Decision{Token: token, Value: value, Path: path, Partition: name, Accepted: true, Status: http.StatusOK})
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (r *Register) read(w http.ResponseWriter, req *http.Request) {
	var value string
	var token uint64
	if _, res := r.resource(req); res != nil {
		r.mu.Lock()
		value, token = res.value, res.token
		r.mu.Unlock()
	}
	w.Header().Set(fence.Header, strconv.FormatUint(max(token, 1), 10))
	w.Header().Set(headerClaimedToken, strconv.FormatUint(token, 10))
	_, _ = io.WriteString(w, value)
}

// valueOf returns the value a write carries: its Tenure-Write header, or
// (up to 64 KiB of) its body.
func valueOf(req *http.Request) string {
	if v := req.Header.Get(headerValue); v != "" {
		return v
	}
	b, _ := io.ReadAll(io.LimitReader(req.Body, 64<<10))
	return string(b)
}

// recordRejections records the requests the middleware rejects.
func (r *Register) recordRejections(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, req)
		if sw.status == http.StatusOK {
			return
		}
		claimed := req.Header.Get(headerClaimedToken)
		if claimed == "" {
			claimed = req.Header.Get(fence.Header)
		}
		token, _ := strconv.ParseUint(claimed, 10, 64)
		r.mu.Lock()
		r.decideLocked(history.Decision{Token: token, Value: valueOf(req), Path: "fenced", Partition: req.PathValue("partition"), Status: sw.status})
		r.mu.Unlock()
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}
