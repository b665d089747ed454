package lease_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/lease"
)

func TestSafe(t *testing.T) {
	if got, want := lease.Safe(10*time.Second, 0.01, 200*time.Millisecond), 9700*time.Millisecond; got != want {
		t.Errorf("Safe(10s, 0.01, 200ms) = %s; want %s", got, want)
	}
}

func TestDeadline(t *testing.T) {
	sent := tenure.Now()
	dl, err := lease.Deadline(sent, 10*time.Second, 0.01, 200*time.Millisecond)
	if err != nil {
		t.Fatalf("Deadline error = %v", err)
	}
	if got, want := dl.Time().Sub(sent.Time()), 9700*time.Millisecond; got != want {
		t.Errorf("Deadline - sent = %s; want %s", got, want)
	}
	_, err = lease.Deadline(tenure.Instant{}, 10*time.Second, 0.01, 200*time.Millisecond)
	if !errors.Is(err, lease.ErrNoSent) || !strings.Contains(err.Error(), "10s") {
		t.Errorf("Deadline(zero Sent) error = %v; want ErrNoSent naming the TTL", err)
	}
}

func TestNextRenewal(t *testing.T) {
	for _, tc := range []struct{ interval, granted, remaining, want time.Duration }{
		{time.Second, 3 * time.Second, 2670 * time.Millisecond, time.Second},
		{5 * time.Second, 3 * time.Second, 2670 * time.Millisecond, time.Second},
		{time.Second, 30 * time.Second, time.Second, 500 * time.Millisecond},
		{time.Second, 3 * time.Second, -time.Second, time.Millisecond},
	} {
		if got := lease.NextRenewal(tc.interval, tc.granted, tc.remaining); got != tc.want {
			t.Errorf("NextRenewal(%s, %s, %s) = %s; want %s", tc.interval, tc.granted, tc.remaining, got, tc.want)
		}
	}
}

func TestPast(t *testing.T) {
	ahead := tenure.Now().Add(time.Hour)
	if over := -ahead.Until(); over > -59*time.Minute {
		t.Errorf("an hour ahead: past = %s; want about -1h", over)
	}
	behind := tenure.Now().Add(-time.Minute)
	if over := -behind.Until(); over < time.Minute {
		t.Errorf("a minute behind: past = %s; want at least 1m", over)
	}
}
