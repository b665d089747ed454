package chaos

import (
	"fmt"
	"testing"
	"time"
)

func TestScheduleReplays(t *testing.T) {
	cfg := ScheduleConfig{Seed: 42, Duration: 120 * time.Second, Nodes: 3, Members: 3, TTL: 2 * time.Second, Margin: 200 * time.Millisecond, Families: Families()}
	a, b := Schedule(cfg), Schedule(cfg)
	cfg.Seed = 43
	c := Schedule(cfg)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("seed 42 gave two schedules:\n%v\n%v", a, b)
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Fatal("seeds 42 and 43 gave the same schedule")
	}
	if len(a) < 15 {
		t.Fatalf("120s schedule has %d faults; want at least 15", len(a))
	}
	seen := map[string]bool{}
	for i, f := range a {
		seen[f.Family] = true
		if i > 0 && f.At < a[i-1].At+a[i-1].Dur {
			t.Errorf("fault %d (%s) starts before fault %d (%s) ends", i, f, i-1, a[i-1])
		}
		if f.At+f.Dur > cfg.Duration {
			t.Errorf("fault %s ends after the run", f)
		}
	}
	for _, fam := range Families() {
		if !seen[fam] {
			t.Errorf("family %s never drawn in 120s", fam)
		}
	}
	cfg.Members = 1
	for _, f := range Schedule(cfg) {
		if f.Family == FamilyMember {
			t.Fatalf("member fault %s drawn for a single-member coordinator", f)
		}
	}
}

func TestParseFamilies(t *testing.T) {
	if got, err := ParseFamilies("all"); err != nil || len(got) != len(Families()) {
		t.Fatalf("ParseFamilies(all) = %v, %v", got, err)
	}
	if got, err := ParseFamilies("pause, crash,pause"); err != nil || fmt.Sprint(got) != "[pause crash]" {
		t.Fatalf("ParseFamilies(pause, crash,pause) = %v, %v; want [pause crash]", got, err)
	}
	if _, err := ParseFamilies("partition,meteor"); err == nil {
		t.Fatal("ParseFamilies(partition,meteor) = nil error; want one naming meteor")
	}
}
