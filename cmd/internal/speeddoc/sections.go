package main

import (
	"fmt"
	"math"
	"strings"
)

// etcd writes the etcd benchmarks: each beside etcd's own recipe.
func (p *page) etcd() {
	p.printf("## etcd\n\n")
	p.text(etcdText)
	if r, ok := p.section("handover", "etcd-handover"); ok {
		p.latencyTable(r.Report, false)
		if row, ok := tenureRow(r.Report, ""); ok {
			p.goal("Goal: p50 at most 1.5× `concurrency.Election`", fmt.Sprintf("%.2f×", row.VsPeer), row.VsPeer <= 1.5)
			p.printf("\n")
		}
	}
	p.text(etcdHandoverText)
	if r, ok := p.section("failover", "etcd-failover"); ok {
		p.latencyTable(r.Report, true)
		p.failoverGoals(r, "`concurrency.Mutex`", 1.0)
	}
	p.text(etcdFailoverText)
	if r, ok := p.section("throughput", "etcd-throughput"); ok {
		p.throughputTable(r.Report)
		if row, ok := tenureRow(r.Report, "clients=10"); ok {
			p.goal("Goal at 10 clients: at least 0.9× the Mutex", fmt.Sprintf("%.2f×", row.VsPeer), row.VsPeer >= 0.9)
			p.printf("\n")
		}
	}
	p.text(etcdThroughputText)
}

// failoverGoals writes a failover's goals: p50 at most limit × the peer
// (when limit is set), p99 at most TTL + 0.5 s.
func (p *page) failoverGoals(r run, peer string, limit float64) {
	row, ok := tenureRow(r.Report, "")
	if !ok || row.Latency == nil {
		return
	}
	ttl := setting(r.Report, "ttl_ms")
	if limit > 0 {
		p.goal(fmt.Sprintf("Goal: p50 at most %.1f× %s", limit, peer), fmt.Sprintf("%.2f×", row.VsPeer), row.VsPeer <= limit)
	}
	p.goal(fmt.Sprintf("Goal: p99 at most TTL + 500 ms (TTL %s s)", trimFloat(ttl/1000)),
		"TTL "+signedMS(row.Latency.P99-ttl), row.Latency.P99 <= ttl+500)
	p.printf("\n")
}

// postgres writes the PostgreSQL benchmarks, each beside the seed SQL.
func (p *page) postgres() {
	p.printf("## PostgreSQL\n\n")
	p.text(postgresText)
	if r, ok := p.section("handover on PostgreSQL", "postgres-handover"); ok {
		p.latencyTable(r.Report, false)
	}
	p.text(postgresHandoverText)
	if r, ok := p.section("failover on PostgreSQL", "postgres-failover"); ok {
		p.latencyTable(r.Report, true)
		p.failoverGoals(r, "", 0)
	}
	p.text(postgresFailoverText)
	if r, ok := p.section("throughput on PostgreSQL", "postgres-throughput"); ok {
		p.throughputTable(r.Report)
		for _, c := range []string{"1 client", "10 clients"} {
			n, _, _ := strings.Cut(c, " ")
			if row, ok := tenureRow(r.Report, "clients="+n); ok {
				p.goal("Goal at "+c+": at least 0.8× `seed-sql`", fmt.Sprintf("%.2f×", row.VsPeer), row.VsPeer >= 0.8)
			}
		}
		p.printf("\n")
	}
	p.text(postgresThroughputText)
}

// partitions writes the partition groups' figures on both backends beside
// their targets.
func (p *page) partitions() {
	p.printf("## Partition groups\n\n")
	p.text(partitionsIntroText)
	e, g := p.runs["etcd-partitions"], p.runs["postgres-partitions"]
	p.printf("```\n%s\n%s\n```\n\n", specByName("etcd-partitions").command(), specByName("postgres-partitions").command())
	for _, r := range []struct {
		run
		on string
	}{{e, "etcd"}, {g, "PostgreSQL"}} {
		if r.Partitions == nil {
			p.printf("On %s the run did not finish: `%s`\n\n", r.on, r.Error)
		}
	}
	pe, pg := orEmpty(e.Partitions), orEmpty(g.Partitions)
	ttl := float64(groupTTLSeconds * 1000)
	p.printf("| P = %s, N = %d, TTL %d s | target | embedded etcd | PostgreSQL |\n|:--|:--|--:|--:|\n",
		thousands(groupPartitions), groupMembers, groupTTLSeconds)
	// row writes a figure of each backend; met, when the row has a
	// target, says whether a backend's figure meets it, and a figure that
	// misses it is marked so.
	row := func(what, target string, f func(r *partitionsReport) string, met func(r *partitionsReport) bool) {
		cell := func(r *partitionsReport) string {
			if r.Partitions == 0 {
				return "—"
			}
			if met != nil && !met(r) {
				return f(r) + " **(not met)**"
			}
			return f(r)
		}
		p.printf("| %s | %s | %s | %s |\n", what, target, cell(pe), cell(pg))
	}
	p.printf("| load average (1 min), before → after | | %.2f → %.2f | %.2f → %.2f |\n", e.LoadBefore, e.LoadAfter, g.LoadBefore, g.LoadAfter)
	p.printf("| run time | | %s | %s |\n", duration(e.ElapsedS), duration(g.ElapsedS))
	pn := float64(groupPartitions) / groupMembers
	row("cold start to fully owned", "< 20 s", func(r *partitionsReport) string { return secs(float64(r.ColdStartMS)) },
		func(r *partitionsReport) bool { return r.ColdStartMS < 20_000 })
	row("claims/s in the cold start", "", func(r *partitionsReport) string { return thousands(r.ClaimsPerSecond) }, nil)
	row("CPU per member, steady state", "< 5 %", func(r *partitionsReport) string { return fmt.Sprintf("%.2f %%", 100*r.CPUPerMember) },
		func(r *partitionsReport) bool { return r.CPUPerMember < 0.05 })
	row("writes(P) / writes(100), steady state", "≤ 1.1", func(r *partitionsReport) string { return fmt.Sprintf("%.3f", r.WritesRatio) },
		func(r *partitionsReport) bool { return r.WritesRatio <= 1.1 })
	row("moves on a join / a graceful leave", fmt.Sprintf("≤ %s / ≤ %s", thousands(1.1*pn), thousands(1.1*groupPartitions/(groupMembers+1))),
		func(r *partitionsReport) string {
			return thousands(float64(r.JoinMoves)) + " / " + thousands(float64(r.LeaveMoves))
		},
		func(r *partitionsReport) bool {
			return float64(r.JoinMoves) <= 1.1*pn && float64(r.LeaveMoves) <= 1.1*groupPartitions/(groupMembers+1)
		})
	row("crash takeover p99 (max)", "≤ TTL + 1 s = "+trimFloat(ttl/1000+1)+" s", func(r *partitionsReport) string {
		return secs(r.CrashP99MS) + " (" + secs(r.CrashMaxMS) + ")"
	}, func(r *partitionsReport) bool { return r.CrashP99MS <= ttl+1000 })
	row("planned-leave hand-over p99", "≤ 1 s", func(r *partitionsReport) string { return secs(r.LeaveP99MS) },
		func(r *partitionsReport) bool { return r.LeaveP99MS <= 1000 })
	row("balance max/mean", "≤ 1.001", func(r *partitionsReport) string { return fmt.Sprintf("%.4f", r.Imbalance) },
		func(r *partitionsReport) bool { return r.Imbalance <= 1.001 })
	row("partitions re-run with a token not greater", "0", func(r *partitionsReport) string { return fmt.Sprint(r.StaleTokens) },
		func(r *partitionsReport) bool { return r.StaleTokens == 0 })
	p.printf("\n")
}

// secs formats milliseconds as seconds: "8.81 s", or "204 ms" under one.
func secs(v float64) string {
	if v < 1000 {
		return fmt.Sprintf("%.0f ms", v)
	}
	return fmt.Sprintf("%.2f s", v/1000)
}

// trimFloat formats v without trailing zeros: 10, 2.5.
func trimFloat(v float64) string { return fmt.Sprintf("%g", v) }

// orEmpty is r, or an empty report (every cell "—") for a run that did
// not finish.
func orEmpty(r *partitionsReport) *partitionsReport {
	if r == nil {
		return &partitionsReport{}
	}
	return r
}

// signedMS formats a difference in milliseconds with its sign: "+337 ms",
// "-12 ms", "+0 ms".
func signedMS(v float64) string {
	r := math.Round(v)
	if r == 0 {
		return "+0 ms"
	}
	return fmt.Sprintf("%+.0f ms", r)
}
