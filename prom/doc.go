// Package prom exports what a tenure.Elector observes as Prometheus metrics.
//
// New registers the collectors on a prometheus.Registerer that the caller
// owns (no global registry, no promauto) and returns a *Metrics, which
// implements tenure.Metrics: set it as Config.Metrics.
//
//	reg := prometheus.NewRegistry()
//	m, err := prom.New(reg, prom.WithConstLabels(prometheus.Labels{"instance_role": "scheduler"}))
//	if err != nil { ... }
//	cfg := tenure.DefaultConfig()
//	cfg.Key = "scheduler"
//	cfg.Metrics = m
//
// # Metrics
//
// With the default namespace "tenure", every series carries a key label (the
// led key) plus any constant labels:
//
//	tenure_leader{key}                        gauge     1 while this node leads key, else 0
//	tenure_fencing_token{key}                 gauge     fencing token of the current or last term
//	tenure_transitions_total{key,kind}        counter   leadership transitions; kind is one of
//	                                                    elected, resigned, lost, expired, fenced,
//	                                                    stepped-down
//	tenure_renew_duration_seconds{key}        histogram duration of every renewal attempt,
//	                                                    successful or not (buckets 1ms–10s)
//	tenure_renew_failures_total{key}          counter   renewal attempts that failed
//	tenure_fenced_rejections_total{key}       counter   terms ended because a resource
//	                                                    rejected the token as stale
//
// Useful queries: sum by (key) (tenure_leader) counts the nodes that believe
// they lead each key. Nodes are scraped at different moments, so two may
// briefly both show 1 around a handover; tenure_fencing_token tells their
// terms apart (the larger token is the newer term). The failure ratio of
// renewals is rate(tenure_renew_failures_total[5m]) /
// rate(tenure_renew_duration_seconds_count[5m]).
//
// The fencing token is exported as a float64 gauge: it is exact up to 2^53,
// far beyond what any coordinator hands out in practice.
//
// # Cardinality
//
// Each key a node has touched costs about 20 series: one each for the leader,
// token, renew-failure and fenced-rejection metrics, up to six transition
// counters and the histogram's 13 buckets plus its sum and count. Keys are
// chosen by the application, not by peers or requests, so their number is
// bounded by design; but a node that serves many partitions (package
// partition), or keys built from unbounded input such as "orders/<id>",
// multiplies that. Keep keys to a known, bounded set, and call Forget when
// a node will not lead a key again, so that its series are dropped.
//
// A constant "holder" label is useful when several nodes are scraped into
// one place, but tenure.DefaultHolder includes the process id and a random
// suffix, so it changes on every restart and each restart starts new
// series; prefer a stable name (a pod or host name) for the label.
package prom
