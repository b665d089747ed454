package prom

// Helps maps the default-namespace name of every metric to its help text
// and type, for the tests' comparisons.
var Helps = map[string]struct{ Help, Type string }{
	"tenure_is_leader":                    {helpIsLeader, "gauge"},
	"tenure_leader_info":                  {helpLeaderInfo, "gauge"},
	"tenure_fencing_token":                {helpToken, "gauge"},
	"tenure_transitions_total":            {helpTransitions, "counter"},
	"tenure_renew_duration_seconds":       {helpRenew, "histogram"},
	"tenure_last_renew_timestamp_seconds": {helpLastRenew, "gauge"},
	"tenure_lease_remaining_seconds":      {helpLease, "gauge"},
	"tenure_leadership_duration_seconds":  {helpLeadership, "histogram"},
	"tenure_leaderless_seconds":           {helpLeaderless, "histogram"},
	"tenure_stale_rejections_total":       {helpStale, "counter"},
	"tenure_coordinator_errors_total":     {helpCoordErrors, "counter"},
}
