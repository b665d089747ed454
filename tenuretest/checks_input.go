package tenuretest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/tenure-dev/tenure/internal/display"
	"github.com/tenure-dev/tenure/internal/limits"

	"github.com/tenure-dev/tenure"
)

// checkBadInput: malformed keys, holders, TTLs and grants are rejected with
// errors that match the right sentinel and name the input, and a refused
// request changes nothing.
func checkBadInput(s *state) {
	k := s.key("k")
	a, b := s.holder("alice"), s.holder("bob")
	ga := s.acquire(k, a)
	s.badAcquires(k, a, b)
	// Refused acquires left the holder untouched, and did not supersede it.
	s.wantLeader(k, ga)
	ga = s.renew(ga)
	s.badKeyRefused("/" + k)
	s.forgedGrants(ga, b)
	s.renew(ga)
}

// badAcquires checks that Acquire refuses malformed keys, holders and TTLs
// of key k (held by a; b is another holder) with the right sentinel, naming
// the input.
func (s *state) badAcquires(k, a, b string) {
	ttl := s.o.ttl
	cases := []struct {
		name   string
		key    string
		holder string
		ttl    time.Duration
		want   error
		text   string // what the error must mention
	}{
		{"empty key", "", b, ttl, tenure.ErrInvalidKey, "key"},
		{"leading slash", "/" + k, b, ttl, tenure.ErrInvalidKey, "/" + k},
		{"dot-dot element", k + "/../x", b, ttl, tenure.ErrInvalidKey, k + "/../x"},
		{"space", k + " x", b, ttl, tenure.ErrInvalidKey, k + " x"},
		{"quote", k + "'; drop", b, ttl, tenure.ErrInvalidKey, k + "'; drop"},
		{"too long key", strings.Repeat("x", limits.MaxKeyLen+1), b, ttl, tenure.ErrInvalidKey, strings.Repeat("x", limits.MaxKeyLen+1)},
		{"empty holder", k, "", ttl, tenure.ErrInvalidHolder, "holder"},
		{"control character in holder", k, "bad\x00holder", ttl, tenure.ErrInvalidHolder, "bad\x00holder"},
		{"too long holder", k, strings.Repeat("h", limits.MaxHolderLen+1), ttl, tenure.ErrInvalidHolder, strings.Repeat("h", limits.MaxHolderLen+1)},
		{"zero TTL", k, b, 0, tenure.ErrInvalidTTL, "0s"},
		{"negative TTL", k, b, -time.Second, tenure.ErrInvalidTTL, "-1s"},
		{"TTL over the maximum", k, b, limits.MaxTTL + time.Hour, tenure.ErrInvalidTTL, (limits.MaxTTL + time.Hour).String()},
		{"zero TTL by the holder", k, a, 0, tenure.ErrInvalidTTL, "0s"},
	}
	for _, tc := range cases {
		ctx, cancel := s.ctx()
		g, err := s.c.Acquire(ctx, tc.key, tc.holder, tc.ttl)
		cancel()
		switch {
		case err == nil:
			s.tb.Errorf("%s: Acquire(%q, %q, %s) = %v, nil; want an error wrapping %v", tc.name, tc.key, tc.holder, tc.ttl, g, tc.want)
		case !errors.Is(err, tc.want):
			s.tb.Errorf("%s: Acquire(%q, %q, %s) error = %v; want it to wrap %v", tc.name, tc.key, tc.holder, tc.ttl, err, tc.want)
		case !mentions(err, tc.text):
			s.tb.Errorf("%s: Acquire(%q, %q, %s) error = %q; want it to name the input %q", tc.name, tc.key, tc.holder, tc.ttl, err, tc.text)
		}
	}
}

// badKeyRefused checks that Leader and Watch refuse badKey with
// tenure.ErrInvalidKey, naming it.
func (s *state) badKeyRefused(badKey string) {
	ctx, cancel := s.ctx()
	defer cancel()
	if _, _, err := s.c.Leader(ctx, badKey); !errors.Is(err, tenure.ErrInvalidKey) || !mentions(err, badKey) {
		s.tb.Errorf("Leader(%q) error = %v; want it to wrap tenure.ErrInvalidKey and name the key", badKey, err)
	}
	if w, ok := s.c, true; ok {
		ch, err := w.Watch(ctx, badKey)
		if !errors.Is(err, tenure.ErrInvalidKey) || !mentions(err, badKey) {
			s.tb.Errorf("Watch(%q) error = %v; want it to wrap tenure.ErrInvalidKey and name the key", badKey, err)
		}
		if err == nil && ch != nil {
			cancel()
			s.awaitClosed(ch, badKey)
		}
	}
}

// forgedGrants checks that grants the coordinator never made cannot be
// renewed and do not release the live grant ga (b is another holder).
// Malformed ones are rejected as such; well-formed ones that are not the
// live grant are reported lost.
func (s *state) forgedGrants(ga tenure.Grant, b string) {
	k, a, ttl := ga.Key, ga.Holder, s.o.ttl
	forged := []struct {
		name string
		g    tenure.Grant
		want error
	}{
		{"zero token", tenure.Grant{Key: k, Holder: a, Token: 0, TTL: ttl}, tenure.ErrInvalidGrant},
		{"another holder's token", tenure.Grant{Key: k, Holder: b, Token: ga.Token, TTL: ttl}, tenure.ErrLost},
		{"a token never granted", tenure.Grant{Key: k, Holder: a, Token: ga.Token + 1_000_000, TTL: ttl}, tenure.ErrLost},
		{"a malformed key", tenure.Grant{Key: "/" + k, Holder: a, Token: ga.Token, TTL: ttl}, tenure.ErrInvalidGrant},
		{"an empty holder", tenure.Grant{Key: k, Holder: "", Token: ga.Token, TTL: ttl}, tenure.ErrInvalidGrant},
	}
	for _, f := range forged {
		ctx, cancel := s.ctx()
		r, err := s.c.Renew(ctx, f.g)
		switch {
		case err == nil:
			s.tb.Errorf("Renew of a grant with %s (%v) = %v, nil; want an error wrapping %v", f.name, f.g, r, f.want)
		case !errors.Is(err, f.want):
			s.tb.Errorf("Renew of a grant with %s (%v) error = %v; want it to wrap %v", f.name, f.g, err, f.want)
		}
		_ = s.c.Release(ctx, f.g) // an error or nil; either way nothing may change
		cancel()
		s.wantLeader(k, ga)
	}
}

// mentions reports whether err's message contains text, as is or quoted.
func mentions(err error, text string) bool {
	msg := err.Error()
	q := strconv.Quote(text)
	return strings.Contains(msg, text) || strings.Contains(msg, q[1:len(q)-1]) ||
		strings.Contains(msg, display.Input(text)) // long inputs are cut
}

// checkCanceledContext: a call whose context has ended returns an error
// wrapping the context's error.
func checkCanceledContext(s *state) {
	k := s.key("k")
	a := s.holder("alice")
	ga := s.acquire(k, a)

	ctx, cancel := context.WithCancel(s.tb.Context())
	cancel()
	if g, err := s.c.Acquire(ctx, s.key("k2"), a, s.o.ttl); !errors.Is(err, context.Canceled) {
		s.tb.Errorf("Acquire with a cancelled context = %v, %v; want an error wrapping context.Canceled", g, err)
	}
	if g, err := s.c.Renew(ctx, ga); !errors.Is(err, context.Canceled) {
		s.tb.Errorf("Renew with a cancelled context = %v, %v; want an error wrapping context.Canceled", g, err)
	}
	if err := s.c.Release(ctx, ga); !errors.Is(err, context.Canceled) {
		s.tb.Errorf("Release with a cancelled context = %v; want an error wrapping context.Canceled", err)
	}
	if g, ok, err := s.c.Leader(ctx, k); !errors.Is(err, context.Canceled) {
		s.tb.Errorf("Leader with a cancelled context = %v, %v, %v; want an error wrapping context.Canceled", g, ok, err)
	}
	// ga's renewal above never ran, or ran and left it live: still ours.
	s.wantLeader(k, ga)
	s.renew(ga)
}

// checkClose: a closed coordinator refuses calls with errors matching
// tenure.ErrClosed. (The factory's cleanup closes it again afterwards.)
func checkClose(s *state) {
	k := s.key("k")
	a := s.holder("alice")
	ga := s.acquire(k, a)
	if err := s.c.Close(); err != nil {
		s.tb.Fatalf("Close() = %v; want nil", err)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if g, err := s.c.Acquire(ctx, k, a, s.o.ttl); !errors.Is(err, tenure.ErrClosed) {
		s.tb.Errorf("Acquire after Close = %v, %v; want an error matching tenure.ErrClosed", g, err)
	}
	if g, ok, err := s.c.Leader(ctx, k); !errors.Is(err, tenure.ErrClosed) {
		s.tb.Errorf("Leader after Close = %v, %v, %v; want an error matching tenure.ErrClosed", g, ok, err)
	}
	if r, err := s.c.Renew(ctx, ga); !errors.Is(err, tenure.ErrClosed) {
		s.tb.Errorf("Renew after Close = %v, %v; want an error matching tenure.ErrClosed", r, err)
	}
	if err := s.c.Release(ctx, ga); !errors.Is(err, tenure.ErrClosed) {
		s.tb.Errorf("Release after Close = %v; want an error matching tenure.ErrClosed", err)
	}
	if w, ok := s.c, true; ok {
		ch, err := w.Watch(ctx, k)
		if !errors.Is(err, tenure.ErrClosed) {
			s.tb.Errorf("Watch after Close error = %v; want an error matching tenure.ErrClosed", err)
		}
		if err == nil && ch != nil {
			cancel()
			s.awaitClosed(ch, k)
		}
	}
	if err := s.c.Close(); err != nil {
		s.tb.Errorf("second Close() = %v; want nil (Close is idempotent)", err)
	}
}
