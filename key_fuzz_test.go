package tenure_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/tenure-dev/tenure/internal/display"
	"github.com/tenure-dev/tenure/internal/inputs"
	"github.com/tenure-dev/tenure/internal/limits"
	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// maxError bounds the length of an error about a bad key or holder: it
// quotes at most 64 bytes of the input, each shown in at most 6 bytes.
const maxError = 6*64 + 300

// FuzzValidateKey: ValidateKey accepts exactly the keys its documentation
// describes, every path element of an accepted key is a valid partition
// name, and a refusal wraps ErrInvalidKey in a message of bounded length.
func FuzzValidateKey(f *testing.F) {
	for _, s := range []string{"jobs", "orders/17", "a.b_c-D/9", "", "/a", "a/", "a//b", "a/./b", "a/../b", "a..b", ".", "..",
		"...", "a/.", "é", "a b", "a\x00", "\xff", strings.Repeat("k", 200), strings.Repeat("k", 201), strings.Repeat("é", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := tenure.ValidateKey(key)
		if err != nil {
			if !errors.Is(err, tenure.ErrInvalidKey) {
				t.Fatalf("ValidateKey(%q) = %v, not wrapping ErrInvalidKey", key, err)
			}
			if len(err.Error()) > maxError {
				t.Fatalf("ValidateKey(%d-byte key): %d-byte error", len(key), len(err.Error()))
			}
			return
		}
		if len(key) < 1 || len(key) > limits.MaxKeyLen {
			t.Fatalf("ValidateKey accepted a %d-byte key", len(key))
		}
		if strings.Trim(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-") != "" {
			t.Fatalf("ValidateKey accepted %q, with a character outside [A-Za-z0-9._/-]", key)
		}
		if strings.Contains(key, "..") {
			t.Fatalf("ValidateKey accepted %q, with '..'", key)
		}
		for _, el := range strings.Split(key, "/") {
			if err := inputs.PartitionName(el); err != nil || el == "." {
				t.Fatalf("ValidateKey accepted %q, whose element %q is no partition name: %v", key, el, err)
			}
		}
	})
}

// FuzzValidateHolder: ValidateHolder accepts exactly 1–256 bytes of valid
// UTF-8 without control characters, and a refusal wraps ErrInvalidHolder
// in a message of bounded length.
func FuzzValidateHolder(f *testing.F) {
	for _, s := range []string{"web-1", "web-1#3f2a9c01", "a b;'\"", "", "\x00", "a\nb", "\u0085", "\xff", "é", "\u2028",
		strings.Repeat("h", 256), strings.Repeat("h", 257), strings.Repeat("é", 129)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, holder string) {
		err := tenure.ValidateHolder(holder)
		control := strings.ContainsFunc(holder, unicode.IsControl)
		want := len(holder) >= 1 && len(holder) <= limits.MaxHolderLen && utf8.ValidString(holder) && !control
		if (err == nil) != want {
			t.Fatalf("ValidateHolder(%q) = %v; want accepted %v", holder, err, want)
		}
		if err != nil {
			if !errors.Is(err, tenure.ErrInvalidHolder) {
				t.Fatalf("ValidateHolder(%q) = %v, not wrapping ErrInvalidHolder", holder, err)
			}
			if len(err.Error()) > maxError {
				t.Fatalf("ValidateHolder(%d-byte holder): %d-byte error", len(holder), len(err.Error()))
			}
		}
	})
}

// FuzzIdentity: SplitIdentity undoes Identity for any instance id without
// '#', splitting any holder gives back its parts, and DescribeHolder shows
// the display name quoted.
func FuzzIdentity(f *testing.F) {
	f.Add("web-1", "3f2a9c01")
	f.Add("web#1", "3f2a9c01")
	f.Add("", "")
	f.Add("plain", "#")
	f.Add("a#b#c", "d")
	f.Fuzz(func(t *testing.T, name, instance string) {
		id := tenure.Identity(name, instance)
		if !strings.Contains(instance, "#") {
			if n, i := display.SplitIdentity(id); n != name || i != instance {
				t.Fatalf("SplitIdentity(Identity(%q, %q)) = %q, %q", name, instance, n, i)
			}
		}
		// name as a holder written by another tool.
		n, i := display.SplitIdentity(name)
		if strings.Contains(name, "#") {
			if tenure.Identity(n, i) != name || strings.Contains(i, "#") {
				t.Fatalf("SplitIdentity(%q) = %q, %q: does not join back", name, n, i)
			}
		} else if n != name || i != "" {
			t.Fatalf("SplitIdentity(%q) = %q, %q; want all name", name, n, i)
		}
		d := display.Holder(name)
		if !strings.HasPrefix(d, strconv.Quote(n)) || (i != "" && !strings.HasSuffix(d, " (instance "+i+")")) {
			t.Fatalf("DescribeHolder(%q) = %s; want name %q and instance %q", name, d, n, i)
		}
	})
}

// FuzzQuoteInput: QuoteInput shows a short input whole as a Go string
// literal, and a long one as a literal of its first bytes (cut on a
// character boundary, never more than 3 bytes short of 64) followed by
// "…" and its length.
func FuzzQuoteInput(f *testing.F) {
	for _, s := range []string{"", "k", "a\"b\\", "\xff", strings.Repeat("k", 64), strings.Repeat("k", 65), strings.Repeat("é", 40),
		strings.Repeat("k", 63) + "é", strings.Repeat("€", 30)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := display.Input(s)
		if len(s) <= 64 {
			if u, err := strconv.Unquote(q); err != nil || u != s {
				t.Fatalf("QuoteInput(%q) = %s, unquotes to %q, %v", s, q, u, err)
			}
			return
		}
		suffix := fmt.Sprintf(" (%d bytes)", len(s))
		lit, ok := strings.CutSuffix(q, suffix)
		if !ok {
			t.Fatalf("QuoteInput(%d-byte input) = %s; want it to end %q", len(s), q, suffix)
		}
		u, err := strconv.Unquote(lit)
		shown, cut := strings.CutSuffix(u, "…")
		if err != nil || !cut || !strings.HasPrefix(s, shown) {
			t.Fatalf("QuoteInput(%q) = %s: not a literal of a prefix and \"…\" (%q, %v)", s, q, u, err)
		}
		if len(shown) < 64-(utf8.UTFMax-1) || len(shown) > 64 {
			t.Fatalf("QuoteInput(%q) = %s shows %d bytes; want 61 to 64", s, q, len(shown))
		}
		if len(q) > maxError {
			t.Fatalf("QuoteInput(%d-byte input) is %d bytes long", len(s), len(q))
		}
	})
}

// FuzzPartitionKey: a partition name that ValidatePartitionName accepts,
// in a group that ValidateGroup accepts for it, makes a valid key that
// splits back into group and name at its last '/'.
func FuzzPartitionKey(f *testing.F) {
	f.Add("jobs", "0")
	f.Add("jobs/eu", "17")
	f.Add("jobs", "a/b")
	f.Add("jobs", "..")
	f.Add("jobs", ".")
	f.Add("", "x")
	f.Add(strings.Repeat("g", 190), "123456789")
	f.Fuzz(func(t *testing.T, group, name string) {
		nerr := inputs.PartitionName(name)
		if nerr != nil {
			if !errors.Is(nerr, tenure.ErrInvalidKey) {
				t.Fatalf("ValidatePartitionName(%q) = %v, not wrapping ErrInvalidKey", name, nerr)
			}
			return
		}
		if strings.Contains(name, "/") || tenure.ValidateKey(name) != nil || name == "." {
			t.Fatalf("ValidatePartitionName accepted %q", name)
		}
		if err := inputs.Group(group, len(name)); err != nil {
			if !errors.Is(err, tenure.ErrInvalidKey) {
				t.Fatalf("ValidateGroup(%q, %d) = %v, not wrapping ErrInvalidKey", group, len(name), err)
			}
			return
		}
		k := partition.Key(group, name)
		if err := tenure.ValidateKey(k); err != nil {
			t.Fatalf("PartitionKey(%q, %q) = %q, an invalid key: %v", group, name, k, err)
		}
		i := strings.LastIndexByte(k, '/')
		if k[:i] != group || k[i+1:] != name {
			t.Fatalf("PartitionKey(%q, %q) = %q splits into %q, %q", group, name, k, k[:i], k[i+1:])
		}
	})
}
