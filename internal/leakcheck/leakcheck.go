// Package leakcheck is goleak.VerifyTestMain for test packages that run etcd
// members in-process.
//
// A stopped etcd member never closes the idle keep-alive connections of the
// HTTP client it calls its peers with (lease renewals forwarded to the raft
// leader, version checks), and the peer end of such a connection only
// notices at etcd's 5s peer read timeout: their goroutines outlive a stopped
// multi-member cluster by up to 5s. VerifyTestMain waits for them, as etcd's
// own testutil.CheckAfterTest does, instead of ignoring any goroutine, so the
// leak check stays strict.
package leakcheck

import (
	"time"

	"go.uber.org/goleak"
)

// Settle is the longest VerifyTestMain waits for goroutines to end.
const Settle = 10 * time.Second

// VerifyTestMain runs m's tests, waits up to Settle for leftover goroutines
// to end, then fails the run if any remain (goleak.VerifyTestMain).
// m is a *testing.M, or a wrapper whose Run calls its Run (pgtest.Main).
func VerifyTestMain(m goleak.TestingM) {
	goleak.VerifyTestMain(settled{m})
}

type settled struct{ m goleak.TestingM }

func (s settled) Run() int {
	code := s.m.Run()
	deadline := time.Now().Add(Settle)
	for goleak.Find() != nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	return code
}
