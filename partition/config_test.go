package partition_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

func TestConfigValidate(t *testing.T) {
	valid := func() partition.Config {
		c := partition.DefaultConfig()
		c.Key, c.Partitions = "jobs", 8
		return c
	}
	for _, tc := range []struct {
		name   string
		modify func(*partition.Config)
		want   []string // every one must be named in the error
	}{
		{"valid", func(*partition.Config) {}, nil},
		{"no partitions", func(c *partition.Config) { c.Partitions = 0 }, []string{"Config.Partitions (0)"}},
		{"names count", func(c *partition.Config) { c.Names = []string{"a", "b"} }, []string{"Config.Names has 2 names for Config.Partitions (8)"}},
		{"bad and duplicate names", func(c *partition.Config) {
			c.Partitions, c.Names = 3, []string{"eu/west", "us", "us"}
		}, []string{`Config.Names[0]`, `must not contain '/'`, `Config.Names[2] ("us") is a duplicate`}},
		{"bad group and TTL", func(c *partition.Config) { c.Key, c.TTL = "/jobs", -1 }, []string{"Config.Key", "Config.TTL"}},
		{"margin below MinMargin", func(c *partition.Config) { c.Margin = 10 * time.Millisecond }, []string{"Config.Margin (10ms) must be at least 50ms"}},
		{"negative intervals", func(c *partition.Config) { c.SyncInterval, c.Debounce = -1, -1 }, []string{"Config.SyncInterval (-1ns)", "Config.Debounce (-1ns)"}},
		{"group too long for names", func(c *partition.Config) { c.Key = strings.Repeat("g", 199) }, []string{"makes keys of 201 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.modify(&c)
			err := c.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v; want nil", err)
				}
				return
			}
			if !errors.Is(err, tenure.ErrInvalidConfig) {
				t.Fatalf("Validate() = %v; want an error matching tenure.ErrInvalidConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q; want it to name %q", err, w)
				}
			}
		})
	}
}
