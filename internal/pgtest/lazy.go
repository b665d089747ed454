package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// Lazy is a server started the first time a test needs one, for a test
// binary whose tests mostly do not: a binary none of whose tests calls
// Need starts no server. The zero Lazy is ready to use; Stop it after the
// tests have run (in TestMain, after m.Run):
//
//	var pg pgtest.Lazy
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		pg.Stop()
//		os.Exit(code)
//	}
type Lazy struct {
	once sync.Once
	s    *Server
	err  error
}

// Need returns the server, starting it on the first call (the calls of
// parallel tests wait for that start). When no server can be had, it ends
// t as the package's Need does: a failure when PostgreSQL is required, a
// skip with a notice otherwise.
func (l *Lazy) Need(t testing.TB) *Server {
	t.Helper()
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		start := time.Now()
		l.s, l.err = Start(ctx)
		if l.err == nil && testing.Verbose() && !l.s.external {
			fmt.Fprintf(os.Stderr, "pgtest: started PostgreSQL in %s at %s (%s)\n", time.Since(start).Round(time.Millisecond), l.s.dir, l.s.dsn)
		}
	})
	return Need(t, l.s, l.err)
}

// Stop stops the server if Need started one, and reports why it could
// not. It must not be called while a test may still call Need.
func (l *Lazy) Stop() error {
	l.once.Do(func() {}) // no server is started after Stop
	if l.s == nil {
		return nil
	}
	return l.s.Stop()
}
