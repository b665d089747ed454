package postgres

// Refusal is refusal, for TestRefusalClasses.
var Refusal = refusal

// GroupTablesSQL is the statement that creates c's group tables, for
// TestAcquireWhileAClaimCommits.
func GroupTablesSQL(c *Coordinator) string {
	t, err := c.groupTables()
	if err != nil {
		panic(err)
	}
	return createGroupTablesSQL(t)
}
