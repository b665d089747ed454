package postgres

// Refusal is refusal, for TestRefusalClasses.
var Refusal = refusal
