package kube

import "errors"

// Sentinel errors. Callers match them with errors.Is (the tenure command
// reports an old API server with ErrIncomparable).
var (
	// ErrIncomparable is wrapped by errors about an API server whose
	// resourceVersions are not comparable integers (Kubernetes before 1.35,
	// or a storage other than etcd): their order cannot be trusted, so
	// they cannot be fencing tokens, and the Coordinator refuses to grant
	// anything on such a server.
	ErrIncomparable = errors.New("kube: resource versions are not comparable")

	// ErrNameClash is wrapped by errors about a Lease that holds another
	// key than the one asked for (see LeaseName).
	ErrNameClash = errors.New("kube: lease name holds another key")
)
