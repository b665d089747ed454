package tenure

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tenure-dev/tenure/internal/display"
	"github.com/tenure-dev/tenure/internal/limits"
)

// ValidateKey reports whether key is a valid key: 1–200 bytes of
// [A-Za-z0-9._/-], no leading '/', no '..' path element, no empty path
// element. The error wraps ErrInvalidKey and names the key and what is
// wrong.
func ValidateKey(key string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w %s: %s", ErrInvalidKey, display.Input(key), why)
	}
	if key == "" {
		return fmt.Errorf("%w: key is empty", ErrInvalidKey)
	}
	if len(key) > limits.MaxKeyLen {
		return bad(fmt.Sprintf("%d bytes long, at most %d allowed", len(key), limits.MaxKeyLen))
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == '/', c == '-':
		default:
			r, _ := utf8.DecodeRuneInString(key[i:])
			return bad(fmt.Sprintf("character %q at byte %d is not allowed (use A-Z a-z 0-9 . _ / -)", r, i))
		}
	}
	if key[0] == '/' {
		return bad("must not start with '/'")
	}
	if strings.HasSuffix(key, "/") {
		return bad("must not end with '/'")
	}
	for _, el := range strings.Split(key, "/") {
		switch el {
		case "":
			return bad("contains an empty path element ('//')")
		case "..", ".":
			return bad(fmt.Sprintf("contains a %q path element", el))
		}
	}
	if strings.Contains(key, "..") {
		return bad("must not contain '..'")
	}
	return nil
}

// ValidateHolder reports whether holder is a usable holder identity: 1–256
// bytes of valid UTF-8 without control characters. Quotes, semicolons and
// spaces are allowed: backends pass holders as parameters, never as text.
func ValidateHolder(holder string) error {
	if holder == "" {
		return fmt.Errorf("%w: holder is empty", ErrInvalidHolder)
	}
	if len(holder) > limits.MaxHolderLen {
		return fmt.Errorf("%w %s: %d bytes long, at most %d allowed", ErrInvalidHolder, display.Input(holder), len(holder), limits.MaxHolderLen)
	}
	if !utf8.ValidString(holder) {
		return fmt.Errorf("%w %s: not valid UTF-8", ErrInvalidHolder, display.Input(holder))
	}
	for i, r := range holder {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w %s: control character %U at byte %d", ErrInvalidHolder, display.Input(holder), r, i)
		}
	}
	return nil
}

// ValidateTTL reports whether ttl is a positive duration of at most a day,
// with at least millisecond resolution.
func ValidateTTL(ttl time.Duration) error {
	switch {
	case ttl <= 0:
		return fmt.Errorf("%w %s: must be positive", ErrInvalidTTL, ttl)
	case ttl < time.Millisecond:
		return fmt.Errorf("%w %s: must be at least 1ms", ErrInvalidTTL, ttl)
	case ttl > limits.MaxTTL:
		return fmt.Errorf("%w %s: must be at most %s", ErrInvalidTTL, ttl, limits.MaxTTL)
	}
	return nil
}
