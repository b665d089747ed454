package etcd

// Refusal is refusal, for TestRefusalClasses.
var Refusal = refusal
