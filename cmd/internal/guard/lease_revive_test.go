package guard

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestLeaseFileNotRevived: once the guard has marked the lease file ended
// (tenure ended the term, or the deadline passed and it killed the tree),
// a renewal that was still in the control channel, with a later deadline, does not
// make the file say held again.
func TestLeaseFileNotRevived(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs map[time.Duration]Message
		read time.Duration // when the file is read: just after the late renewal
	}{
		{"renewal after end", map[time.Duration]Message{
			0: leaseMsg(time.Second, 0), 100 * time.Millisecond: {Op: OpEnd},
			200 * time.Millisecond: leaseMsg(5*time.Second, 0)}, 250 * time.Millisecond},
		{"renewal after the deadline", map[time.Duration]Message{
			0: leaseMsg(time.Second, 0), 1500 * time.Millisecond: leaseMsg(5*time.Second, 0)}, 1550 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, _ := newState(t, 10*time.Second)
				drive(s, tc.read, tc.msgs)
				l, err := ReadLease(s.path)
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Check(s.clock()); !errors.Is(err, ErrEnded) {
					t.Errorf("lease file at %v = %+v: check %v; want ErrEnded", tc.read, l, err)
				}
			})
		})
	}
}
