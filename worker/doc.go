// Package worker runs a leader's work loop: fetch pending items, check the
// term before each one, process it with the term's fencing token, and step
// down the moment a fenced resource says the token is stale.
//
// A Worker is meant to be run from the function given to tenure's
// Elector.Run, as the package example shows: elector.Run(ctx,
// func(ctx context.Context, term *tenure.Term) error { return w.Run(ctx,
// term) }).
//
// Each cycle the worker checks the term (Term.Check) and that enough of it
// remains (WithMinRemaining), fetches up to the batch size from the Source,
// and processes the items one at a time, checking the term again before
// every item: no item is started once the term has ended, whatever was
// fetched. The Processor gets the term's context and token; it must present
// the token to every resource it changes. A processing error matching
// tenure.ErrStaleToken ends the term at once (Term.StepDown), and Run
// returns it, so the elector records "fenced by resource".
//
// Items fetched but not processed when the term ends are dropped: a Source
// must keep an item pending until its processing has been recorded (for
// example by a fenced write that marks it done), so that the next leader
// fetches it again.
package worker
