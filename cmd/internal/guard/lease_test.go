package guard

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// heldLease is a live lease with its deadline a second after at(0).
var heldLease = Lease{Key: "jobs", Holder: "web-1", Instance: "3f9c2a", Token: 42, Deadline: at(time.Second), TTLMs: 2000, Live: true}

// TestLeaseFileCutShort: no part of a lease file says held: every prefix of
// a live record, and the record followed by anything but whitespace (a
// second record, say), is refused by ReadLease, as lease check refuses it.
func TestLeaseFileCutShort(t *testing.T) {
	b, err := json.Marshal(heldLease)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "lease.json")
	refused := func(content []byte) {
		t.Helper()
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if l, err := ReadLease(path); err == nil {
			t.Errorf("ReadLease of %q = %+v, nil; want an error (lease check would answer %v)", content, l, l.Check(at(0)))
		}
	}
	for n := range len(b) {
		refused(b[:n])
	}
	refused(append(append([]byte{}, b...), b...))
	refused(append(append([]byte{}, b...), '}'))
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := ReadLease(path); err != nil || l.Check(at(0)) != nil {
		t.Fatalf("ReadLease of the whole record = %+v, %v; check %v; want held", l, err, l.Check(at(0)))
	}
}

// TestEndLease: after EndLease returns nil the file at path does not say
// held, whatever it said: a live lease is marked ended (the rest kept),
// even past its deadline, and one already ended, unparseable or absent is
// left as it is. When the file can be neither replaced nor removed, EndLease returns
// an error.
func TestEndLease(t *testing.T) {
	ended := heldLease
	ended.Live = false
	for _, tc := range []struct {
		name    string
		content []byte // nil: no file
		want    *Lease // the file's lease afterwards; nil: as it was
	}{
		{name: "live", content: mustJSON(t, heldLease), want: &ended},
		{name: "ended", content: mustJSON(t, ended)},
		{name: "past its deadline", content: mustJSON(t, Lease{Token: 1, Deadline: at(-time.Millisecond), Live: true}),
			want: &Lease{Token: 1, Deadline: at(-time.Millisecond)}},
		{name: "cut short", content: mustJSON(t, heldLease)[:20]},
		{name: "absent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "lease.json")
			if tc.content != nil {
				if err := os.WriteFile(path, tc.content, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := EndLease(path, at(0)); err != nil {
				t.Fatalf("EndLease = %v; want nil", err)
			}
			b, err := os.ReadFile(path)
			switch {
			case tc.content == nil:
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("EndLease of no file made one: %q, %v", b, err)
				}
			case tc.want == nil:
				if string(b) != string(tc.content) {
					t.Errorf("file after EndLease = %q; want unchanged %q", b, tc.content)
				}
			default:
				l, err := ReadLease(path)
				if err != nil || l != *tc.want {
					t.Errorf("file after EndLease = %+v, %v; want %+v", l, err, *tc.want)
				}
			}
		})
	}
}

// TestEndLeaseStuck: when EndLease can neither tell what the file says nor
// remove it (here the path names a directory that is not empty), it
// returns an error: the caller must not hand the lease over before its
// deadline.
func TestEndLeaseStuck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lease.json")
	if err := os.MkdirAll(filepath.Join(path, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := EndLease(path, at(0)); err == nil {
		t.Fatal("EndLease of a path it can neither read nor remove = nil; want an error")
	}
}

func mustJSON(t *testing.T, l Lease) []byte {
	t.Helper()
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
