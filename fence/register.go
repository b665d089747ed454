package fence

// A Register is an in-memory register whose writes are fenced: it holds one
// value and the highest token that wrote it, accepts a write whose token is
// at least that high, and rejects lower tokens (and token 0) without changing
// anything. It is the reference fenced resource of the verification harness
// and a convenient one for tests and demos. A Register is safe for concurrent
// use; the zero value is ready to use.
type Register[V any] struct {
	f     Fence
	value V
}

// NewRegister returns an empty Register: token 0, the zero value of V. Users
// call it for a fenced resource kept in memory; tests, demos and `tenure
// verify` use one.
func NewRegister[V any](opts ...Option) *Register[V] {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	r := &Register[V]{}
	r.f.observe = o.observe
	return r
}

// Write stores value if token is at least the highest token accepted so far,
// and records token; the check and the write are one atomic step. A lower
// token gets a *StaleError (matching tenure.ErrStaleToken) and token 0 an
// error wrapping ErrMissingToken; a rejected write changes nothing but the
// Rejected count.
func (r *Register[V]) Write(token uint64, value V) error {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	if err := r.f.admitLocked(token, value); err != nil {
		return err
	}
	r.value = value
	return nil
}

// Read returns the value and the token of the last accepted write, read
// together atomically.
func (r *Register[V]) Read() (value V, token uint64) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	return r.value, r.f.highest
}

// Value returns the value of the last accepted write, the zero value of V
// if there was none.
func (r *Register[V]) Value() V {
	v, _ := r.Read()
	return v
}

// Token returns the highest token accepted so far, 0 if none.
func (r *Register[V]) Token() uint64 { return r.f.Token() }

// Stats returns the counts of writes accepted and rejected so far.
func (r *Register[V]) Stats() Stats { return r.f.Stats() }
