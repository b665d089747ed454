package main

// The prose of docs/speed.md. It states no measured figure: every figure
// is rendered from docs/speed.json, so none can outlive its measurement.

const introText = "`tenure bench` runs tenure and the recipe you would use instead **alternately in\n" + `one run**, on real servers, and prints each figure beside the ratio between them
and the physical floor it cannot beat, measured in the same run. With no flags it
starts an etcd member of its own; ` + "`--endpoints` or `--postgres DSN`" + ` run against
yours. ` + "`--json`" + ` prints every figure (durations in ` + "`*_ms`" + ` fields), ` + "`--html FILE`" + `
writes a self-contained page with latency CDFs. Each finishes in under two
minutes with its defaults.

` + "```sh" + `
tenure bench handover                       # leader lets go → successor acts; vs etcd concurrency.Election
tenure bench failover                       # SIGKILL the leading process → successor acts; vs a concurrency.Mutex holder (etcdctl lock)
tenure bench throughput                     # acquire/renew/release per second at 1, 10, 50 clients
tenure bench ttl                            # failover time vs wrongful demotions per hour, for 1s,2s,5s,10s
tenure bench handover --postgres "$DSN"     # the same on PostgreSQL, vs plain SQL (seed-sql)
tenure bench partitions                     # per-partition leadership at P = 10,000, 10 members (--json, --html: hand-over and takeover CDFs)
` + "```" + `

` + "`tenure bench kube`" + ` does the same on a Kubernetes API server beside client-go's
` + "`leaderelection`" + ` ([kubernetes.md](kubernetes.md)), and ` + "`tenure bench footprint`" + `
measures what a ` + "`tenure run`" + ` costs beside its peers ([footprint.md](footprint.md)).
On PostgreSQL the peer, ` + "`seed-sql`" + ` in the output, is the plain recipe: one
conditional ` + "`UPDATE … RETURNING`" + ` on a leadership table, re-run by a contender
every 5 ms (` + "`--seed-poll`" + `).

` + "`scripts/speed.sh`" + ` (ten to fifteen minutes) runs every benchmark below, one
after the other, with a PostgreSQL server of its own (started as the tests
start theirs: ` + "`fsync=off`" + `, on this machine), and writes this page. A test
fails when the page was measured more than ten commits to coordinator code
ago, or when a figure on it was edited by hand. ` + "`scripts/speed-guard.sh`" + ` runs in CI: short
runs of the ratios that have goals, against floors far below them.
`

const etcdText = `A grant rides on a lease of its own and a leader's deadline counts from the
send of the request that last started or extended it (the README's "Simple
before fast").
`

const etcdHandoverText = `The floor is the release's watch event plus the successor's acquisition
(one transaction). The Election's successor only reads after the event;
tenure's writes the key with a compare, which is what makes its token the
key's own revision.
`

const etcdFailoverText = `The floor is the old lease's end at etcd. tenure renews every TTL/3; the
Mutex's session keeps its lease alive from the etcd client's keepalive
loop, which at TTL 2 s renews about every second. A kill at a random phase
then leaves on average more lease on tenure's (` + "`tenure bench failover\n--renew-interval 1s`" + ` runs tenure at the Mutex's cadence). We keep the
shorter interval: it leaves room for two failed renewals before the
deadline, and the deadline, not the failover, is what keeps two leaders
apart.
`

const etcdThroughputText = `A cycle of tenure is an Acquire (one transaction, on a lease granted
ahead, and a lookup of that lease, which another process may have changed),
a Renew (a keepalive and, sent with it, a read of the key to confirm it is
still the grant's: an operator's ` + "`tenure release --force`" + ` deletes it) and a
Release (one compare-and-delete): five requests in four round trips. The
Mutex's cycle here is three: its Lock's transaction, one keepalive of its
session's lease and its Unlock's delete, with no read of its own. Where the
server and both clients share few cores, the server's work per cycle sets
the pace, and the extra read shows directly. The read is what tells a
leader its key was taken away; we do not trade it for throughput.
`

const postgresText = `PostgreSQL runs on the same machine as the benchmark, each benchmark on a
database of its own. Tails swing with the machine's load more than medians.
`

const postgresHandoverText = `The floor is one write and its notification. tenure's follower waits on
LISTEN/NOTIFY; ` + "`seed-sql`" + `'s re-runs its statement every 5 ms.
`

const postgresFailoverText = `The floor is the old lease's expiry at the coordinator; a successor that
acted before it would be counted under failures.
`

const postgresThroughputText = "`pg_notify` serializes every notifying commit in the cluster on one lock.\n" +
	`tenure notifies only while some coordinator watches the key
(` + "`postgres.NotifyWatched`" + `, the default; watchers hold a shared advisory lock;
` + "`tenure-notify-all` is `NotifyAll`" + `). Keys that can name a partition (` + "`jobs/7`" + `: a
` + "`/`" + `, then a partition name) are checked so that a single key never takes a
live member's partition; the benchmark's keys are such keys (` + "`bench/0`" + `, …),
on a database without partition groups. For profiling, the Go benchmarks:
` + "`go test -run '^$' -bench 'PostgresCoordinator/ops' ./cmd/internal/bench/`" + `.
`

const ttlText = `## TTL

` + "`tenure bench ttl`" + ` prints, for TTLs of 1, 2, 5 and 10 s, the failover time
against the wrongful demotions per hour to expect, and recommends a TTL.

The figures are a model fed with what was measured for a few seconds (renewal round
trips, this process's stalls) plus ` + "`--latency`/`--pause`/`--pause-rate`" + `; the
output says so. A short measurement cannot see rare stalls: the recommendation
also asks for a renewal slack twice the worst delay seen. Each TTL is modelled
at the lease the coordinator grants for it (etcd rounds up to whole seconds
and to its minimum, 2 s with the default 1 s election timeout):
` + "`granted_ttl_ms`" + `, with a note when it differs from the one asked for. Run it
on your own coordinator and hosts: the recommendation is only as good as the
few seconds it measured.
`

const partitionsIntroText = "`tenure bench partitions` runs N members of one group in one process, each\n" +
	`with its own coordinator client, and measures the cold start (to every
partition owned), the steady state, a join, a planned leave and a crash
(` + "`tenure bench partitions --help`" + `). It prints the CPU its own process got on
every progress line. CPU per member is the bench process's CPU divided by N,
and includes, on etcd, the etcd member running in it. Writes are counted at
the server (etcd's metrics; on PostgreSQL ` + "`pg_stat_user_tables`" + `, from 11 s
after the cold start settles: PostgreSQL's statistics report an idle server
process's writes up to 10 s late).
`

const partitionsText = `The planned leave's partitions (P/N of them) are claimed by the N − 1
members left at once, in batches sized to the coordinator's pace.

Every statement that looks up a list of partitions on PostgreSQL does one
primary-key lookup per name, whatever statistics PostgreSQL has on the
tables, so that tables just created (no statistics yet) are not scanned
whole for each member.

**Elsewhere.** ` + "`tenure bench partitions --endpoints … --metrics …`" + ` measures a
group on an etcd cluster of your own (for example three ` + "`tenure server`" + `
processes, with ` + "`--prefix unwatched/`" + ` so that their status pages do not poll
the group's tables). ` + "`scripts/saturated-partitions.sh [--postgres \"$DSN\"]`" + `
runs a group of separate ` + "`tenure run --partitions`" + ` processes beside busy
loops, two per core, and measures from outside (` + "`tenure status --json`" + `):
the time until every partition's command runs, and the partitions moved
when a member joins. Every command gets SIGTERM when its member's renewal
is overdue by a retry period (TTL/10; [run.md](run.md)): a host that delays
a renewal longer restarts the commands in place with new tokens.

### Limits at large P

- Each membership renews from a goroutine of its own, on the Elector's
  schedule. Under load, renewals can still be answered late ("membership
  renewal overdue" in the members' logs: the coordinator, not the member,
  is slow).
- The check of the partitions owned grows with P/N: one read listing a
  member's keys on etcd, one primary-key lookup per partition on
  PostgreSQL.
- Members whose assignments disagree read the table to agree again at most
  once per P/1,000 s (100 s at 100,000).
- On a host whose load leaves the bench process a fraction of a core, runs
  at tens of thousands of partitions can fail: phases time out.

### When the bench fails, it says why

A phase that does not finish within 3 TTLs + 30 s fails with the phase, how
far it got, the partitions started per second over the phase and its last
10 s, the CPU the process had and the load average, and the members' most
frequent warnings with their last error.
`
