package tenure_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tenure-dev/tenure"
)

// TestLongInputsCutInErrors: a 10,000-byte key or holder is named by its
// first bytes and its length, not echoed whole; a multi-byte character is
// never cut in half.
func TestLongInputsCutInErrors(t *testing.T) {
	long := strings.Repeat("k", 10000)
	for _, tc := range []struct {
		name string
		err  error
		is   error
		want string
	}{
		{"key", tenure.ValidateKey(long), tenure.ErrInvalidKey, `"` + strings.Repeat("k", 64) + `…" (10000 bytes)`},
		{"holder", tenure.ValidateHolder(long), tenure.ErrInvalidHolder, "(10000 bytes)"},
		{"multi-byte", tenure.ValidateHolder(strings.Repeat("é", 200)), tenure.ErrInvalidHolder, `"` + strings.Repeat("é", 32) + `…" (400 bytes)`},
		{"short key", tenure.ValidateKey("a b"), tenure.ErrInvalidKey, `"a b"`},
	} {
		if !errors.Is(tc.err, tc.is) || !strings.Contains(tc.err.Error(), tc.want) || len(tc.err.Error()) > 200 {
			t.Errorf("%s: error %q; want %v, under 200 bytes, with %q", tc.name, tc.err, tc.is, tc.want)
		}
	}
}
