// Package fence protects resources with fencing tokens.
//
// A fenced resource records the highest fencing token it has accepted and
// rejects any lower one, so that a leader that has been deposed — paused past
// its lease, partitioned, or simply slow — cannot overwrite the work of its
// successor. Equal tokens are accepted: the same term may write again. Token 0
// is never granted and is rejected as missing.
//
// The package offers three building blocks:
//
//   - [Fence]: the bare check, for guarding a resource of your own
//     ([Fence.Admit], or [Fence.Enter] to also wait for older holders to
//     finish), and [Register], an in-memory register whose writes are fenced.
//   - [Middleware]: an http.Handler guard that reads the [Header]
//     ("Fencing-Token") of each request and answers 428, 400 or 409 with an
//     RFC 9457 problem body when the token is missing, malformed or stale.
//   - [Transport]: an http.RoundTripper that stamps the current term's token
//     on every request, refuses to send once the term has ended, and steps the
//     term down the moment a server answers that its token is stale.
//
// A rejection for staleness is a *[StaleError] carrying the presented and the
// required token; it matches tenure.ErrStaleToken, so that
// errors.Is(err, tenure.ErrStaleToken) holds and user code returning it makes
// the elector step down at once ("fenced by resource").
package fence
