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

// With a planted bug and no families, a run draws the families that expose
// the bug and aims every fault at the leader; families given still win.
func TestPlantDefaults(t *testing.T) {
	for _, p := range Plants() {
		o := Options{Plant: p}.withDefaults()
		if fmt.Sprint(o.Families) != fmt.Sprint(PlantFamilies(p)) || len(o.Families) == 0 || !o.LeaderOnly {
			t.Errorf("plant %s: families %v, leader only %v; want %v aimed at the leader", p, o.Families, o.LeaderOnly, PlantFamilies(p))
		}
		sched := Schedule(ScheduleConfig{Seed: 1, Duration: 20 * time.Second, Nodes: 3, Members: 1, TTL: o.TTL, Margin: o.Margin, Families: o.Families, LeaderOnly: true})
		if len(sched) == 0 {
			t.Errorf("plant %s: a 20s run draws no fault", p)
		}
		for _, f := range sched {
			if f.Node != LeaderNode || f.Family != o.Families[0] {
				t.Errorf("plant %s: drew %s; want only %v faults on the leader", p, f, o.Families)
			}
		}
		o = Options{Plant: p, Families: []string{FamilyCrash}}.withDefaults()
		if fmt.Sprint(o.Families) != "[crash]" || o.LeaderOnly {
			t.Errorf("plant %s with families [crash]: got %v, leader only %v; want [crash] as given", p, o.Families, o.LeaderOnly)
		}
	}
	if o := (Options{}).withDefaults(); len(o.Families) != len(Families()) || o.LeaderOnly {
		t.Errorf("no plant: families %v, leader only %v; want all, any node", o.Families, o.LeaderOnly)
	}
}
