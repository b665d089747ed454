// Package errs makes sentinel errors that belong to a family: a backend's
// "invalid config" is its own error, with its own message, and also matches
// tenure.ErrInvalidConfig, so that errors.Is works across packages.
package errs

// Kind returns a sentinel error whose message is msg and which matches
// parent with errors.Is (and errors.As) as well as itself.
func Kind(msg string, parent error) error { return &kind{msg, parent} }

type kind struct {
	msg    string
	parent error
}

func (e *kind) Error() string { return e.msg }
func (e *kind) Unwrap() error { return e.parent }
