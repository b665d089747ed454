package guard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// protoSeeds are streams of messages as tenure sends them, and broken ones.
var protoSeeds = []string{
	`{"op":"lease","lease":{"key":"jobs","holder":"web-1","instance":"3f9c2a","token":42,"deadline_boot_ns":1000000000,"ttl_ms":1000,"live":true},"env":["TENURE_TOKEN=42"]}
{"op":"lease","lease":{"key":"jobs","token":42,"deadline_boot_ns":2000000000,"ttl_ms":1000,"live":true},"term_at_boot_ns":1900000000}
{"op":"end","signal":15}`,
	`{"op":"lease","lease":{"deadline_boot_ns":500000000,"ttl_ms":2000}}{"op":"stop"}{"op":"cont"}{"op":"signal","signal":1}`,
	`{"op":"lease","lease":{"deadline_boot_ns":300000000,"ttl_ms":100}} {"op":"stop"} {"op":"lease","lease":{"deadline_boot_ns":900000000,"ttl_ms":100}} {"op":"cont"}`,
	`{"op":"lease","lease":null}{"op":"end"}{"op":"lease","lease":{"deadline_boot_ns":9000000000,"ttl_ms":1}}`,
	`{"op":"lease","lease":{"deadline_boot_ns":-1,"ttl_ms":-5}}`,
	`{"op":"lease","lease":{"token":-1}}`,
	`{"op":"lease","lease":{"token":1e3}}`,
	`{"op":"bogus"}`,
	`{"op":`,
	`[]`,
	``,
}

// decodeAll runs the guard's reader of tenure's messages on b and returns
// what it decodes.
func decodeAll(b []byte) []Message {
	var out []Message
	for m := range readMessages(bytes.NewReader(b)) {
		out = append(out, m)
	}
	return out
}

// FuzzReadMessages: the guard's reader of tenure's messages ends on any
// input, and every message it decodes encodes and decodes to itself.
func FuzzReadMessages(f *testing.F) {
	for _, s := range protoSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range decodeAll(b) {
			enc, err := json.Marshal(m)
			if err != nil {
				t.Fatalf("message %+v decoded from %q does not encode: %v", m, b, err)
			}
			back := decodeAll(enc)
			if len(back) != 1 || !reflect.DeepEqual(back[0], normal(m)) {
				t.Fatalf("message %+v (from %q) encodes as %s, which decodes to %+v", m, b, enc, back)
			}
		}
	})
}

// normal is m as it comes back from JSON: an empty Env is omitted, so it
// decodes as nil.
func normal(m Message) Message {
	if len(m.Env) == 0 {
		m.Env = nil
	}
	return m
}

// FuzzLeaseFile: the lease file's content, as the guard writes it, reads
// back as the same lease.
func FuzzLeaseFile(f *testing.F) {
	f.Add("jobs", "web-1", "3f9c2a", uint64(42), int64(1e9), int64(1000), true)
	f.Add("", "\xff\"", "", uint64(1<<64-1), int64(-1), int64(-1), false)
	f.Fuzz(func(t *testing.T, key, holder, instance string, token uint64, deadline, ttlMs int64, live bool) {
		l := Lease{Key: key, Holder: holder, Instance: instance, Token: token, Deadline: boottime.Instant(deadline), TTLMs: ttlMs, Live: live}
		path := t.TempDir() + "/lease.json"
		if err := writeLease(path, l); err != nil {
			t.Fatal(err)
		}
		got, err := ReadLease(path)
		if err != nil {
			t.Fatalf("ReadLease of %+v: %v", l, err)
		}
		l.Key, l.Holder, l.Instance = valid(l.Key), valid(l.Holder), valid(l.Instance)
		if got != l {
			t.Fatalf("lease %+v reads back as %+v", l, got)
		}
	})
}

// valid is s as JSON carries it: each invalid byte becomes U+FFFD.
func valid(s string) string { return string([]rune(s)) }

// sigLog is the tree of a state under FuzzGuardState: it checks each
// signal against the state and the clock when it is sent.
type sigLog struct {
	t      *testing.T
	s      *state
	now    *boottime.Instant
	killed bool
	sent   []string
}

func (l *sigLog) signal(sig syscall.Signal, _ func() bool) {
	l.sent = append(l.sent, fmt.Sprintf("%d@%d", sig, *l.now))
	if l.killed {
		l.t.Fatalf("signal %d at %d after SIGKILL (sent %v)", sig, *l.now, l.sent)
	}
	if sig == syscall.SIGCONT && *l.now >= KillAt(l.s.lease) {
		l.t.Fatalf("SIGCONT at %d, at or after the kill was due %d (deadline %d; sent %v)", *l.now, KillAt(l.s.lease), l.s.lease.Deadline, l.sent)
	}
}

func (l *sigLog) kill() {
	l.sent = append(l.sent, fmt.Sprintf("kill@%d", *l.now))
	l.killed = true
}

func (l *sigLog) scout(func() bool)  {}
func (l *sigLog) freeze(func() bool) { l.signal(syscall.SIGSTOP, nil) }

// FuzzGuardState: whatever messages tenure's side sends, and whenever, the
// guard never continues the tree at or after its deadline, sends nothing
// after SIGKILL, has killed the tree by the deadline (or the end of the
// kill grace after an OpEnd) once a lease arrived, and never revives a
// term once it ended.
func FuzzGuardState(f *testing.F) {
	for _, s := range protoSeeds {
		f.Add([]byte(s), []byte{0, 50, 200, 10, 255})
	}
	f.Fuzz(runGuardState)
}

// runGuardState is FuzzGuardState's check of one stream and timing.
func runGuardState(t *testing.T, stream, steps []byte) {
	{
		msgs := decodeAll(stream)
		if len(msgs) > 64 {
			msgs = msgs[:64]
		}
		var now boottime.Instant
		s := &state{clock: func() boottime.Instant { return now }, grace: 100 * time.Millisecond}
		log := &sigLog{t: t, s: s, now: &now}
		s.tree = log
		var endBy boottime.Instant // the latest SIGKILL may come once an OpEnd arrived; 0 if none
		ended := false
		for i, m := range msgs {
			if len(steps) > 0 {
				now = now.Add(time.Duration(steps[i%len(steps)]) * 10 * time.Millisecond)
			}
			wasLeased := s.leased
			s.handle(m)
			if m.Op == OpEnd && wasLeased {
				ended = true
				if by := now.Add(s.grace); endBy == 0 || by < endBy {
					endBy = by
				}
			}
			if ended && s.lease.Live {
				t.Fatalf("message %d (%+v) revived the ended term: %+v", i, m, s.lease)
			}
			s.tick()
			if s.leased && !log.killed && (now >= s.lease.Deadline || endBy != 0 && now >= endBy) {
				t.Fatalf("after message %d (%+v) at %d: tree not killed; deadline %d, end %d (sent %v)", i, m, now, s.lease.Deadline, endBy, log.sent)
			}
		}
	}
}

// FuzzParseStat: a stat line of any command name parses back to its pid,
// parent, process group and state, and ParseStat never panics on any line.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1234 (sleep) S 1 1234 1234 0 -1"), 1234, "sleep", byte('S'), 1, 1234)
	f.Add([]byte("7 (a) (b)) Z 2 3 4"), 7, "a) (b", byte('Z'), 2, 3)
	f.Add([]byte("(x) R 1 1"), 1, ") R 1 1 (", byte('R'), 0, 0)
	f.Add([]byte("1 (x)"), 1, "", byte('T'), -1, -1)
	f.Fuzz(func(t *testing.T, line []byte, pid int, comm string, st byte, ppid, pgid int) {
		_, _ = ParseStat(line)
		if st < 'A' || st > 'Z' || pid < 0 {
			return
		}
		comm = strings.ReplaceAll(comm, "\x00", "") // the kernel's names hold no NUL
		b := []byte(strconv.Itoa(pid) + " (" + comm + ") " + string(st) + " " + strconv.Itoa(ppid) + " " + strconv.Itoa(pgid) + " 0 -1 4194304\n")
		p, err := ParseStat(b)
		if err != nil || p != (Proc{Pid: pid, PPid: ppid, Pgid: pgid, State: st}) {
			t.Fatalf("ParseStat(%q) = %+v, %v", b, p, err)
		}
	})
}
