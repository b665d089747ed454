package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A mistyped flag gets a suggestion; a flag far from every name gets none.
func TestUnknownFlagSuggestion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--key", "k", "--tll", "5s", "--", "true"}, "unknown flag: --tll (did you mean --ttl?)"},
		{[]string{"status", "--kye", "k"}, "(did you mean --key?)"},
		{[]string{"status", "--endpoint", "http://127.0.0.1:1"}, "(did you mean --endpoints?)"},
		{[]string{"run", "--key", "k", "--zzzzzz", "--", "true"}, "unknown flag: --zzzzzz (see 'tenure run --help')"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), tc.args, strings.NewReader(""), &out, &errb)
		if code != ExitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("tenure %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, errb.String(), ExitUsage, tc.want)
		}
	}
	for _, tc := range []struct {
		a, b string
		want int
	}{{"tll", "ttl", 1}, {"", "key", 3}, {"margni", "margin", 2}, {"ttl", "ttl", 0}} {
		if d := editDistance(tc.a, tc.b); d != tc.want {
			t.Errorf("editDistance(%q, %q) = %d; want %d", tc.a, tc.b, d, tc.want)
		}
	}
}
