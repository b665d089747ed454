package tenure_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/identity"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure/internal/display"

	"github.com/tenure-dev/tenure"
)

func validConfig() tenure.Config {
	c := tenure.DefaultConfig()
	c.Key = "scheduler"
	return c
}

func TestDefaultConfigValid(t *testing.T) {
	c := validConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConfig() with a key: Validate() = %v; want nil", err)
	}
	if c.Holder == "" {
		t.Fatal("DefaultConfig().Holder is empty; want hostname-pid-random")
	}
	if a, b := identity.DefaultHolder(), identity.DefaultHolder(); a == b {
		t.Fatalf("DefaultHolder() twice = %q, %q; want distinct", a, b)
	}
	if got, want := timing.RenewInterval(c.TTL, c.RenewInterval), c.TTL/3; got != want {
		t.Errorf("timing.RenewInterval(TTL, 0) = %s; want TTL/3 = %s", got, want)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*tenure.Config)
		want   []string // substrings, one per expected error
	}{
		{"margin equals TTL", func(c *tenure.Config) { c.TTL = 2 * time.Second; c.Margin = 3 * time.Second },
			[]string{"Config.Margin (3s) must be less than Config.TTL (2s)"}},
		{"negative margin", func(c *tenure.Config) { c.Margin = -time.Second },
			[]string{"Config.Margin (-1s) must not be negative"}},
		{"margin below MinMargin", func(c *tenure.Config) { c.Margin = 0 },
			[]string{"Config.Margin (0s) must be at least 50ms, the longest host suspend a term does not count: a suspend of 50ms just before the deadline would let the term act 50ms − 0s = 50ms past its lease"}},
		{"margin just below MinMargin", func(c *tenure.Config) { c.Margin = timing.MinMargin - time.Millisecond },
			[]string{"Config.Margin (49ms) must be at least 50ms"}},
		{"margin eats the drift allowance", func(c *tenure.Config) { c.TTL = time.Second; c.MaxDrift = 0.2; c.Margin = 900 * time.Millisecond },
			[]string{"Config.Margin (900ms) leaves no safe lease"}},
		{"renew interval too long", func(c *tenure.Config) { c.RenewInterval = 9 * time.Second },
			[]string{"Config.RenewInterval (9s) must be less than the safe lease"}},
		{"negative renew interval", func(c *tenure.Config) { c.RenewInterval = -time.Second },
			[]string{"Config.RenewInterval (-1s) must not be negative"}},
		{"drift too large", func(c *tenure.Config) { c.MaxDrift = 0.5 },
			[]string{"Config.MaxDrift (0.5) must be in [0, 0.5)"}},
		{"drift negative", func(c *tenure.Config) { c.MaxDrift = -0.1 },
			[]string{"Config.MaxDrift (-0.1) must be in [0, 0.5)"}},
		{"drift NaN", func(c *tenure.Config) { c.MaxDrift = math.NaN() },
			[]string{"Config.MaxDrift (NaN)"}},
		{"zero TTL", func(c *tenure.Config) { c.TTL = 0 },
			[]string{"Config.TTL: tenure: invalid TTL 0s: must be positive"}},
		{"empty key", func(c *tenure.Config) { c.Key = "" },
			[]string{"Config.Key: tenure: invalid key: key is empty"}},
		{"bad key character", func(c *tenure.Config) { c.Key = "jobs;drop" },
			[]string{`Config.Key: tenure: invalid key "jobs;drop": character ';' at byte 4`}},
		{"empty holder", func(c *tenure.Config) { c.Holder = "" },
			[]string{"Config.Holder: tenure: invalid holder: holder is empty"}},
		{"retry period not below renew interval", func(c *tenure.Config) { c.RetryPeriod = 4 * time.Second },
			[]string{"Config.RetryPeriod (4s) must be less than the renew interval (3.333333333s)"}},
		{"negative request timeout", func(c *tenure.Config) { c.RequestTimeout = -1 },
			[]string{"Config.RequestTimeout (-1ns) must not be negative"}},
		{"every bad field reported", func(c *tenure.Config) { c.Key = "/x"; c.Holder = ""; c.MaxDrift = 2 },
			[]string{"Config.Key", "Config.Holder", "Config.MaxDrift (2)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.mutate(&c)
			err := c.Validate()
			if err == nil {
				t.Fatalf("Validate() = nil; want errors %q", tc.want)
			}
			if !errors.Is(err, tenure.ErrInvalidConfig) {
				t.Errorf("Validate() = %v; want it to match ErrInvalidConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q; want it to contain %q", err, w)
				}
			}
			if got := len(strings.Split(err.Error(), "\n")); got != len(tc.want) {
				t.Errorf("Validate() reported %d errors (%q); want %d", got, err, len(tc.want))
			}
		})
	}
}

func TestValidateKey(t *testing.T) {
	good := []string{"a", "scheduler", "orders/17", "A-Z_0.9", "x/y/z", strings.Repeat("k", 200)}
	for _, k := range good {
		if err := tenure.ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q) = %v; want nil", k, err)
		}
	}
	bad := map[string]string{
		"":                       "key is empty",
		"/abs":                   "must not start with '/'",
		"a/../b":                 `".." path element`,
		"a..b":                   "must not contain '..'",
		"a//b":                   "empty path element",
		"trailing/":              "must not end with '/'",
		"sp ace":                 "character ' ' at byte 2",
		"quote'":                 `character '\'' at byte 5`,
		"semi;colon":             "character ';' at byte 4",
		"naïve":                  "character 'ï' at byte 2",
		strings.Repeat("k", 201): "201 bytes long, at most 200",
		"./x":                    `"." path element`,
	}
	for k, want := range bad {
		err := tenure.ValidateKey(k)
		if err == nil {
			t.Errorf("ValidateKey(%q) = nil; want error containing %q", k, want)
			continue
		}
		if !errors.Is(err, tenure.ErrInvalidKey) || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateKey(%q) = %q; want ErrInvalidKey containing %q", k, err, want)
		}
	}
}

func TestValidateHolder(t *testing.T) {
	for _, h := range []string{"node-1", "o'brien; DROP TABLE x;--", "ünïcode host"} {
		if err := tenure.ValidateHolder(h); err != nil {
			t.Errorf("ValidateHolder(%q) = %v; want nil", h, err)
		}
	}
	for h, want := range map[string]string{
		"":                       "holder is empty",
		"tab\there":              "control character U+0009",
		"\xff":                   "not valid UTF-8",
		strings.Repeat("h", 257): "257 bytes long",
	} {
		err := tenure.ValidateHolder(h)
		if err == nil || !errors.Is(err, tenure.ErrInvalidHolder) || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateHolder(%q) = %v; want ErrInvalidHolder containing %q", h, err, want)
		}
	}
}

func TestGrantValidate(t *testing.T) {
	g := tenure.Grant{Key: "k", Holder: "h", Token: 1, TTL: time.Second}
	if err := g.Validate(); err != nil {
		t.Fatalf("Validate() = %v; want nil", err)
	}
	g.Token = 0
	if err := g.Validate(); !errors.Is(err, tenure.ErrInvalidGrant) || !strings.Contains(err.Error(), "token 0") {
		t.Fatalf("Validate() of token 0 = %v; want ErrInvalidGrant naming token 0", err)
	}
}

func TestIdentity(t *testing.T) {
	c := tenure.DefaultConfig()
	c.Key, c.Holder = "k", "web-1"
	if identity.ProcessInstance() != identity.ProcessInstance() || len(identity.ProcessInstance()) != 8 {
		t.Fatalf("ProcessInstance() = %q; want 8 hex digits, the same every call", identity.ProcessInstance())
	}
	c.Instance = "x"
	if got := tenure.Identity(c.Holder, c.Instance); got != "web-1#x" {
		t.Fatalf("Identity() = %q; want web-1#x", got)
	}
	for _, tc := range []struct{ in, name, inst string }{
		{"web-1#x", "web-1", "x"},
		{"a#b#c", "a#b", "c"},
		{"legacy", "legacy", ""},
	} {
		if n, i := display.SplitIdentity(tc.in); n != tc.name || i != tc.inst {
			t.Errorf("SplitIdentity(%q) = %q, %q; want %q, %q", tc.in, n, i, tc.name, tc.inst)
		}
	}
	c.Instance = "a#b"
	if err := c.Validate(); !errors.Is(err, tenure.ErrInvalidConfig) || !strings.Contains(err.Error(), "Config.Instance") {
		t.Fatalf("Validate() with Instance %q = %v; want an error naming Config.Instance", c.Instance, err)
	}
}

func TestDescribeHolder(t *testing.T) {
	for in, want := range map[string]string{
		"web-1#3f2a9c01": `"web-1" (instance 3f2a9c01)`,
		"legacy":         `"legacy"`,
	} {
		if got := display.Holder(in); got != want {
			t.Errorf("DescribeHolder(%q) = %s; want %s", in, got, want)
		}
	}
}
