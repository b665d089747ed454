package campaign_test

import (
	"testing"

	"github.com/tenure-dev/tenure/internal/campaign"
)

type coord struct{ n int }

type uncomparable struct{ m map[string]int }

func TestEnter(t *testing.T) {
	c1, c2 := &coord{1}, &coord{2}
	leave, ok := campaign.Enter(c1, campaign.Key, "jobs", "web#1")
	if !ok {
		t.Fatal("Enter() on an empty registry = false; want true")
	}
	for _, tc := range []struct {
		name          string
		coordinator   any
		kind          campaign.Kind
		key, identity string
		want          bool
	}{
		{"same coordinator, key and identity", c1, campaign.Key, "jobs", "web#1", false},
		{"another instance", c1, campaign.Key, "jobs", "web#2", true},
		{"another holder", c1, campaign.Key, "jobs", "api#1", true},
		{"another key", c1, campaign.Key, "jobs/0", "web#1", true},
		{"a group of the same name", c1, campaign.Group, "jobs", "web#1", true},
		{"another coordinator", c2, campaign.Key, "jobs", "web#1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, ok := campaign.Enter(tc.coordinator, tc.kind, tc.key, tc.identity)
			if ok != tc.want {
				t.Fatalf("Enter(%v, %s, %q, %q) = %v; want %v", tc.coordinator, tc.kind, tc.key, tc.identity, ok, tc.want)
			}
			if ok {
				l()
			}
		})
	}
	leave()
	leave() // twice: harmless
	again, ok := campaign.Enter(c1, campaign.Key, "jobs", "web#1")
	if !ok {
		t.Fatal("Enter() after the first campaign left = false; want true")
	}
	again()

	u := uncomparable{m: map[string]int{}}
	l, ok := campaign.Enter(u, campaign.Key, "jobs", "web#1")
	if !ok {
		t.Fatal("Enter() with an uncomparable coordinator = false; want true (and no panic)")
	}
	if _, ok := campaign.Enter(uncomparable{}, campaign.Key, "jobs", "web#1"); ok {
		t.Error("Enter() twice with uncomparable coordinators = true; want false (counted as one)")
	}
	l()
}
