// Package documented is a fixture of housestyle's tests: a package with
// an exported name of every kind, listed in ../documented.txt.
package documented

import "errors"

// Sentinel errors.
var (
	// ErrOne is one error.
	ErrOne = errors.New("documented: one")
	// ErrTwo is another.
	ErrTwo = errors.New("documented: two")
)

// Limit is the most there is.
const Limit = 10

// Kind is a kind of widget.
type Kind int

// The kinds of widgets.
const (
	Small Kind = iota
	Large
)

// Widget grows.
type Widget struct {
	// Name names the widget.
	Name string
	n    int
}

// A Grower grows.
type Grower interface {
	// Grow grows.
	Grow()
	grown() bool
}

// New returns a widget.
func New(k Kind) *Widget { return &Widget{n: int(k)} }

// Grow grows w up to Limit.
func (w *Widget) Grow() { w.n = min(w.n+1, Limit) }

// Size is how big w is.
func (w *Widget) Size() int { return w.n }

// Reset empties w.
func Reset(w *Widget) { w.n = 0 }

// unexported names need nothing.
func helper() {}
