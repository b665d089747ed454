// Package documented is a fixture of housestyle's tests: every exported
// name says who calls it, in each of the ways the house style accepts.
package documented

import "errors"

// Sentinel errors. Callers match them with errors.Is.
var (
	// ErrOne is one error.
	ErrOne = errors.New("documented: one")
	// ErrTwo is another.
	ErrTwo = errors.New("documented: two")
)

// Limit is the most there is. Used by Widget.Grow and by users who size
// their own buffers.
const Limit = 10

// Kind is a kind of widget; its values below are covered by it. Users pass
// it to New.
type Kind int

// The kinds of widgets.
const (
	Small Kind = iota
	Large
)

// Widget grows; its example covers it.
type Widget struct{ n int }

// New returns a widget; its example covers it.
func New(k Kind) *Widget { return &Widget{n: int(k)} }

// Grow grows w up to Limit.
func (w *Widget) Grow() { w.n = min(w.n+1, Limit) }

// Size is a method whose example covers its type too.
func (w *Widget) Size() int { return w.n }

// Reset is exported for tools that reuse widgets.
func Reset(w *Widget) { w.n = 0 }

// unexported names need nothing.
func helper() {}
