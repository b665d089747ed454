// Package prom exports what tenure observes as Prometheus metrics.
//
// New registers the collectors on a prometheus.Registerer that the caller
// owns (no global registry, no promauto) and returns a *Metrics, which
// implements tenure.Metrics: set it as Config.Metrics, and pass the
// coordinator through Metrics.Instrument to count its failed calls (see
// Example_elector).
//
// # Metrics
//
// With the default namespace "tenure" (docs/monitoring.md
// has the full table with help texts):
//
//	tenure_is_leader{key}                        gauge     1 while this instance leads key
//	tenure_leader_info{key,holder}               gauge     1 for the holder last seen (display name)
//	tenure_fencing_token{key}                    gauge     token of this instance's current or last term
//	tenure_transitions_total{key,reason}         counter   acquired, released, deadline, lost, fenced
//	tenure_renew_duration_seconds{key,result}    histogram renewals by result: ok, lost, error
//	tenure_last_renew_timestamp_seconds{key}     gauge     Unix time of the last grant or renewal
//	tenure_lease_remaining_seconds{key}          gauge     time to the local deadline, read at scrape
//	tenure_leadership_duration_seconds{key}      histogram length of this instance's terms
//	tenure_leaderless_seconds{key}               histogram time the key was seen without a holder
//	tenure_stale_rejections_total{resource}      counter   stale writes rejected by fence guards
//	tenure_coordinator_errors_total{op}          counter   failed coordinator calls
//
// A partition group's metrics come from NewPartition, on the same registry:
//
//	tenure_partitions_owned{group}, tenure_partition_members{group},
//	tenure_partitions_unowned{group}, tenure_partition_oldest_unowned_seconds{group},
//	tenure_partition_imbalance_ratio{group}, tenure_partition_moves_total{group,reason}
//
// The Elector reports the first nine through the tenure.Metrics methods;
// ObserveLeader takes what a status poller or a watch sees of other holders;
// Instrument wraps a Coordinator to count its errors (the wrapper is still a
// partition.Coordinator when the coordinator is one, so partition groups
// run on it and their failed calls are counted too); FenceObserver (for
// fence.WithObserver) and ObserveGuard count stale writes at the resource.
//
// Nodes are scraped at different moments, so two may briefly both show
// tenure_is_leader 1 around a handover; tenure_fencing_token tells their
// terms apart (the larger token is the newer term). The token is exported as
// a float64 gauge: exact up to 2^53, far beyond what coordinators hand out.
//
// # Cardinality
//
// No label grows without bound: keys, resources and groups are chosen by
// the application, reasons, results and ops are fixed sets, and a key has
// one leader_info series at a time. Each key costs about 60 series (the
// renew histogram has three results of 16 series each). Keep keys to a
// known, bounded set, and call Forget when a node will not lead a key again,
// so that its series are dropped.
package prom
