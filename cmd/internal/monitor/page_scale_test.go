package monitor_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/cmd/internal/headless"
	"github.com/tenure-dev/tenure/cmd/internal/monitor"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
)

// bigGroup makes group "big" of p partitions on c: n members (m00#0, …)
// with hour-long leases own all but the last unowned partitions, in equal
// runs by index. It returns the members.
func bigGroup(t *testing.T, c *memory.Coordinator, p, n, unowned int) []partition.Member {
	t.Helper()
	names := partition.Names(p)
	per := (p - unowned) / n
	members := make([]partition.Member, n)
	for i := range members {
		m, err := c.JoinGroup(t.Context(), "big", fmt.Sprintf("m%02d#%d", i, i), time.Hour, 0)
		if err == nil {
			_, err = c.ClaimPartitions(t.Context(), m, names[i*per:(i+1)*per])
		}
		if err != nil {
			t.Fatal(err)
		}
		members[i] = m
	}
	return members
}

// moveFirst moves the first k partitions of from to to.
func moveFirst(t *testing.T, c *memory.Coordinator, from, to partition.Member, k int) {
	t.Helper()
	gs, err := c.GroupPartitions(t.Context(), from.Group)
	if err != nil {
		t.Fatal(err)
	}
	var mine []tenure.Grant
	var names []string
	for _, g := range gs {
		if g.Holder == from.ID && len(mine) < k {
			mine = append(mine, g)
			names = append(names, g.Key[len(from.Group)+1:])
		}
	}
	if err := c.ReleasePartitions(t.Context(), from, mine); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ClaimPartitions(t.Context(), to, names); err != nil {
		t.Fatal(err)
	}
}

// The page at 100,000 partitions, from a real group on the memory
// coordinator (20 members, 40 partitions unowned, 50 just moved) read by
// the real Monitor and handler: /status stays small (a summary and the
// rows to look at first), every redraw of the page (DOM built and laid
// out, timed in the page with performance.now()) stays under 100 ms, the
// unowned and moved partitions come first, and the full table pages and
// filters.
func TestPageAt100kPartitions(t *testing.T) {
	chromium := headless.Need(t)
	c := memory.New()
	defer c.Close()
	const p, n, unowned, moved = 100_000, 20, 40, 50
	members := bigGroup(t, c, p, n, unowned)
	names := partition.Names(p)
	mon := newMonitor(t, c, monitor.Config{PartitionsOnly: true, Poll: time.Second,
		Partitions: func(ctx context.Context, _ []tenure.Grant) ([]partition.Table, error) {
			tb, err := partition.ReadTable(ctx, c, "big", names)
			return []partition.Table{tb}, err
		}})
	waitFor(t, 30*time.Second, "the monitor's first read", func() bool { return len(mon.Status().Groups) == 1 })
	moveFirst(t, c, members[0], members[1], moved)
	waitFor(t, 30*time.Second, "the moves", func() bool { return mon.Status().Groups[0].Moved == moved })
	srv := httptest.NewServer(mon.Handler())
	defer srv.Close()
	for path, most := range map[string]int{"/status": 64 << 10, "/status/partitions?limit=100": 64 << 10} {
		_, body := get(t, srv.Config.Handler, path)
		t.Logf("GET %s at %d partitions: %d bytes", path, p, len(body))
		if len(body) > most {
			t.Errorf("GET %s at %d partitions = %d bytes; want at most %d", path, p, len(body), most)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, err := headless.Open(ctx, chromium, srv.URL+"/", 1280, 1400)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	eval := func(expr string, out any) {
		t.Helper()
		if err := b.Eval(ctx, expr, out); err != nil {
			t.Fatal(err)
		}
	}
	var redraws struct {
		Count     int
		Last, Max float64
		Recent    []float64
	}
	waitFor(t, time.Minute, "ten redraws", func() bool { eval(`window.tenureRedraw`, &redraws); return redraws.Count >= 10 })
	checkPageRows(t, eval)
	if err := b.SaveScreenshot(ctx, "partitions-100k.png"); err != nil {
		t.Error(err)
	}

	eval(`(() => { const s = document.querySelector(".group select.state"); s.value = "unowned"; s.onchange(); return true; })()`, new(bool))
	var rng string
	waitFor(t, 30*time.Second, "the unowned filter", func() bool {
		eval(`document.querySelector(".group .range").textContent`, &rng)
		return rng == "rows 1–40 of 40"
	})
	eval(`(() => { const s = document.querySelector(".group select.state"); s.value = "all"; s.onchange(); return true; })()`, new(bool))
	waitFor(t, 30*time.Second, "the whole table again", func() bool {
		eval(`document.querySelector(".group .range").textContent`, &rng)
		return rng == "rows 1–100 of 100,000"
	})
	eval(`document.querySelector(".group button.next").click(), true`, new(bool))
	waitFor(t, 30*time.Second, "the second page", func() bool {
		eval(`document.querySelector(".group .range").textContent`, &rng)
		return rng == "rows 101–200 of 100,000"
	})
	eval(`window.tenureRedraw`, &redraws)
	t.Logf("%d redraws at %d partitions, timed in the page: last %.1f ms, most %.1f ms; the last 20: %v", redraws.Count, p, redraws.Last, redraws.Max, redraws.Recent)
	cpu := redrawCPU(t, ctx, b, eval)
	t.Logf("a redraw at %d partitions costs %.1f ms of the page's main thread", p, cpu)
	if cpu >= 100 {
		t.Errorf("a redraw at %d partitions = %.1f ms of CPU; want under 100 ms", p, cpu)
	}
}

// redrawCPU is the CPU time of the page's main thread per redraw, over 20
// redraws of what a poll draws (the machine's load does not count in it,
// unlike the times measured in the page).
func redrawCPU(t *testing.T, ctx context.Context, b *headless.Browser, eval func(string, any)) float64 {
	t.Helper()
	const k = 20
	before, err := b.MainThreadTime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var count int
	eval(`(() => { for (let i = 0; i < `+fmt.Sprint(k)+`; i++) window.tenureRedraw.again(); return window.tenureRedraw.count; })()`, &count)
	after, err := b.MainThreadTime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return float64(after-before) / float64(time.Millisecond) / k
}

// checkPageRows checks what the page shows of the big group: the summary,
// 20 members, the 40 unowned then the 50 moved partitions first, and the
// first page of the full table.
func checkPageRows(t *testing.T, eval func(string, any)) {
	t.Helper()
	var shown struct {
		Tiles            []string
		Members          int
		Attention, First []string
		Range            string
		AllRows          int
	}
	eval(`(() => { const g = document.querySelector('.group[data-group="big"]');
		const kind = (r) => r.dataset.holder === "" ? "unowned" : r.querySelector(".moved") ? "moved" : "owned";
		return {
			tiles: [...g.querySelectorAll(".tile")].map(e => e.textContent),
			members: g.querySelectorAll("table.members tbody tr").length,
			attention: [...g.querySelectorAll("table.attention tbody tr")].map(kind),
			first: [...g.querySelectorAll("table.all tbody tr")].slice(0, 2).map(r => r.dataset.key + " " + r.dataset.holder),
			range: g.querySelector(".range").textContent,
			allRows: g.querySelectorAll("table.all tbody tr").length,
		}; })()`, &shown)
	want := []string{"100,000partitions", "99,960owned", "40unowned", "50moved in the last 2 min", "20members"}
	for i, w := range want {
		if i >= len(shown.Tiles) || shown.Tiles[i] != w {
			t.Errorf("summary tiles = %q; want them to begin %q", shown.Tiles, want)
			break
		}
	}
	kinds := map[string]int{}
	for i, k := range shown.Attention {
		kinds[k]++
		if (i < 40) != (k == "unowned") || (i >= 40 && k != "moved") {
			t.Errorf("attention row %d is %s; want 40 unowned, then 50 moved", i, k)
			break
		}
	}
	if shown.Members != 20 || len(shown.Attention) != 90 || shown.Range != "rows 1–100 of 100,000" || shown.AllRows != 100 ||
		len(shown.First) != 2 || shown.First[0] != "big/0 m01" || shown.First[1] != "big/1 m01" {
		t.Errorf("page shows %d members, %d attention rows %v, table %q with %d rows beginning %q; want 20, 90 (40 unowned, 50 moved), rows 1–100 of 100,000 beginning big/0 and big/1 moved to m01",
			shown.Members, len(shown.Attention), kinds, shown.Range, shown.AllRows, shown.First)
	}
}
