package chaos

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tenure-dev/tenure/internal/plant"
)

// Options configure a verification run. Start from DefaultOptions: every
// field is used as set (a zero MaxDrift is a drift of zero; a Margin below
// timing.MinMargin is refused, never raised), and Validate refuses a value
// that cannot run. The fields documented
// with "nil" or "empty" take a derived value when unset.
type Options struct {
	// Seed picks the fault schedule. Default 1.
	Seed uint64
	// Duration of the run, at least 5s. Default 120s.
	Duration time.Duration
	// Nodes is the number of node processes, 2 to 9. Default 3.
	Nodes int
	// Members is the number of embedded etcd members: 1 (default) or 3.
	// Under KubeAPIServer, they store the API server's data.
	Members int
	// Endpoints names an external etcd cluster (http:// only) instead of
	// embedded members.
	Endpoints []string
	// Postgres is a PostgreSQL DSN to use instead of etcd.
	Postgres string
	// Kubeconfig names a kubeconfig file: the Leases of its current
	// context's API server (Kubernetes 1.35 or newer) instead of etcd. The
	// run cannot restart that server: the apiserver family does not strike.
	Kubeconfig string
	// Namespace holds the Leases on Kubernetes (Kubeconfig); empty means
	// the kubeconfig context's.
	Namespace string
	// KubeAPIServer is a kube-apiserver executable: the run starts it on
	// its embedded etcd members and keeps the Leases in its namespace
	// "default"; the apiserver family crashes and restarts it.
	KubeAPIServer string
	// TTL is the lease TTL. Default 2s. etcd grants whole seconds.
	TTL time.Duration
	// Margin is the elector's safety margin, at least timing.MinMargin.
	// Default 200ms (TTL/10).
	Margin time.Duration
	// MaxDrift is the elector's assumed clock-rate drift, and the bound of
	// the clock faults' rates. Default 0.01.
	MaxDrift float64
	// WriteEvery is how often a leader writes. Default 30ms.
	WriteEvery time.Duration
	// ReadEvery is how often the runner reads the register. Default 50ms.
	ReadEvery time.Duration
	// Families are the fault families drawn; nil means all, or with a
	// Plant, the families that expose it (PlantFamilies), every fault aimed
	// at the leader.
	Families []string
	// Plant is the planted bug, plant.None for the node as shipped.
	Plant string
	// Schedule overrides the drawn fault schedule when non-nil.
	Schedule []Fault
	// FaultStart, FaultTail and MaxGap tune the schedule; zero means the
	// values derived from the TTL (see scheduleConfig).
	FaultStart, FaultTail, MaxGap time.Duration
	// LeaderOnly aims every node fault at the leader of the moment.
	LeaderOnly bool
	// Key is the key the nodes compete for. Default "tenure/verify".
	Key string
	// NodeCommand returns the command that runs one node with the JSON spec.
	// Required. "tenure verify-node --spec JSON" re-executes the tenure
	// binary.
	NodeCommand func(spec string) *exec.Cmd
	// Dir holds the embedded members' data; empty means a temporary
	// directory, removed at the end.
	Dir string
	// Progress, when not nil, receives a progress line every half second
	// (with a carriage return, for a terminal).
	Progress io.Writer
	// CheckTimeout bounds the linearizability check. Default 60s.
	CheckTimeout time.Duration
	// Partitions, when positive, makes every node a member of one
	// partition group of that many partitions under Key (package
	// partition) instead of an Elector of Key; each partition has its own
	// resource in the register, and the checkers judge each partition as
	// they judge a single key (see partitionHistory). Default 0: one key.
	Partitions int
}

// DefaultOptions returns the options of a run at tenure verify's defaults.
// NodeCommand is left to the caller.
func DefaultOptions() Options {
	return Options{
		Seed: 1, Duration: 120 * time.Second, Nodes: 3, Members: 1,
		TTL: 2 * time.Second, Margin: 200 * time.Millisecond, MaxDrift: 0.01,
		WriteEvery: 30 * time.Millisecond, ReadEvery: 50 * time.Millisecond,
		Key: "tenure/verify", CheckTimeout: 60 * time.Second,
	}
}

// withDefaults returns o with its derived values: the families drawn when
// none were named.
func (o Options) withDefaults() Options {
	if o.Families == nil && o.Plant != plant.None {
		o.Families, o.LeaderOnly = PlantFamilies(o.Plant), true
	}
	if o.Families == nil {
		o.Families = Families()
	}
	return o
}

// Validate reports every problem with o, each naming its field.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.Nodes < 2 || o.Nodes > 9 {
		bad("Options.Nodes (%d) must be between 2 and 9", o.Nodes)
	}
	if o.Members != 1 && o.Members != 3 {
		bad("Options.Members (%d) must be 1 or 3", o.Members)
	}
	errs = append(errs, o.validateCoordinator()...)
	if o.Duration < 5*time.Second {
		bad("Options.Duration (%s) must be at least 5s", o.Duration)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"WriteEvery", o.WriteEvery}, {"ReadEvery", o.ReadEvery}, {"CheckTimeout", o.CheckTimeout}} {
		if d.d <= 0 {
			bad("Options.%s (%s) must be positive", d.name, d.d)
		}
	}
	if o.NodeCommand == nil {
		bad("Options.NodeCommand is nil")
	}
	if err := checkPlant(o.Plant); err != nil {
		errs = append(errs, err)
	}
	for _, ep := range o.Endpoints {
		if _, err := hostPort(ep); err != nil {
			bad("Options.Endpoints: %q: %v", ep, err)
		}
	}
	if o.Partitions < 0 || o.Partitions > maxResources {
		bad("Options.Partitions (%d) must be between 0 and %d", o.Partitions, maxResources)
	}
	spec := NodeSpec{Key: o.Key, Holder: "n0.1", TTL: o.TTL, Margin: o.Margin, MaxDrift: o.MaxDrift, Partitions: o.Partitions}
	if o.Partitions > 0 {
		if err := spec.groupConfig().Validate(); err != nil {
			errs = append(errs, err)
		}
	} else if err := spec.electorConfig().Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validateCoordinator reports problems with the fields that choose the
// coordinator: at most one of Endpoints, Postgres, Kubeconfig and
// KubeAPIServer; Members beside embedded etcd only; Namespace with
// Kubeconfig only.
func (o Options) validateCoordinator() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	var chosen []string
	for _, c := range []struct {
		name string
		set  bool
	}{{"Endpoints", len(o.Endpoints) > 0}, {"Postgres", o.Postgres != ""}, {"Kubeconfig", o.Kubeconfig != ""}, {"KubeAPIServer", o.KubeAPIServer != ""}} {
		if c.set {
			chosen = append(chosen, "Options."+c.name)
		}
	}
	if len(chosen) > 1 {
		bad("%s are exclusive", strings.Join(chosen, " and "))
	}
	if (len(o.Endpoints) > 0 || o.Postgres != "" || o.Kubeconfig != "") && o.Members != 1 {
		bad("Options.Members (%d) applies to the embedded coordinator only", o.Members)
	}
	switch {
	case o.Namespace != "" && o.Kubeconfig == "":
		bad("Options.Namespace (%s) applies to Options.Kubeconfig only", o.Namespace)
	case o.Namespace != "":
		if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
			bad("Options.Namespace %q is not a namespace name: %s", o.Namespace, strings.Join(msgs, "; "))
		}
	}
	if o.KubeAPIServer != "" {
		if st, err := os.Stat(o.KubeAPIServer); err != nil {
			bad("Options.KubeAPIServer: %w", err)
		} else if st.IsDir() || st.Mode()&0o111 == 0 {
			bad("Options.KubeAPIServer: %s is not an executable file", o.KubeAPIServer)
		}
	}
	return errs
}

// hostPort returns the host:port of an http:// URL or a host:port pair.
func hostPort(ep string) (string, error) {
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil {
			return "", err
		}
		if u.Scheme != "http" {
			return "", fmt.Errorf("scheme %q: only http:// endpoints can be proxied", u.Scheme)
		}
		ep = u.Host
	}
	if _, _, err := net.SplitHostPort(ep); err != nil {
		return "", err
	}
	return ep, nil
}

// schedule is o.Schedule, or the schedule drawn from o.
func (o Options) schedule() []Fault {
	if o.Schedule != nil {
		return o.Schedule
	}
	return drawSchedule(scheduleConfig{Seed: o.Seed, Duration: o.Duration, Nodes: o.Nodes, Members: o.Members, APIServer: o.KubeAPIServer != "",
		TTL: o.TTL, Margin: o.Margin, MaxDrift: o.MaxDrift, Families: o.Families, Start: o.FaultStart, Tail: o.FaultTail, MaxGap: o.MaxGap, LeaderOnly: o.LeaderOnly})
}
