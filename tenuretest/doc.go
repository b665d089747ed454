// Package tenuretest is the conformance suite every tenure.Coordinator must
// pass: mutual exclusion, strictly increasing fencing tokens (also across
// coordinator restarts), expiry on the coordinator's clock, no renewal after
// expiry, release, leadership queries and watches, renewing one grant only,
// concurrent acquirers, and bad inputs rejected with errors that name the input.
//
// A backend's test calls RunCoordinatorTests with a factory that returns a
// new coordinator for each subtest (see the package example).
//
// The suite runs on real time (it talks to network servers, so it cannot
// use testing/synctest), with the TTL given by WithTTL, and polls with
// deadlines rather than sleeping for fixed periods. Its subtests run in
// parallel and use unique keys (derived from the test name plus a random
// suffix), so several runs can share one external server.
package tenuretest
