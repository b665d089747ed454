package embedded

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tenure-dev/tenure/internal/freeport"
)

// FreeLocalURLs returns n distinct http:// URLs on 127.0.0.1 whose ports
// were free when it was called, for members started right after, typically
// in tests. (etcd can listen for clients on port 0, but a cluster's peers
// must know each other's ports in advance.) The ports lie below the
// kernel's ephemeral range, so that a member restarted on its port does not
// find it taken by an outgoing connection; another listener can still take
// a port in between, and Start then fails with "address already in use".
func FreeLocalURLs(n int) ([]string, error) {
	urls, err := freeport.LocalURLs(n)
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	return urls, nil
}

// LocalCluster returns configurations for an n-member cluster on loopback
// ports that were free when it was called, members named m1…mn with data
// directories dir/m1…dir/mn. Start every member (concurrently: each waits
// for a quorum) to bootstrap the cluster.
func LocalCluster(dir string, n int) ([]Config, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: cluster of %d members", ErrInvalidConfig, n)
	}
	urls, err := FreeLocalURLs(2 * n)
	if err != nil {
		return nil, err
	}
	cfgs := make([]Config, n)
	members := make([]string, n)
	for i := range cfgs {
		name := fmt.Sprintf("m%d", i+1)
		cfgs[i] = Config{
			Dir:        filepath.Join(dir, name),
			Name:       name,
			ClientURLs: []string{urls[2*i]},
			PeerURLs:   []string{urls[2*i+1]},
		}
		members[i] = name + "=" + urls[2*i+1]
	}
	for i := range cfgs {
		cfgs[i].InitialCluster = strings.Join(members, ",")
	}
	return cfgs, nil
}
