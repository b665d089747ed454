package kube_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// Leading a key on Kubernetes Leases from inside a pod, with its service
// account (docs/kubernetes.md lists the Role it needs).
func Example() {
	ctx := context.Background()
	rc, err := rest.InClusterConfig() // or clientcmd for a kubeconfig
	if err != nil {
		log.Fatal(err)
	}
	coord, err := kube.Dial(ctx, rc, "jobs") // or kube.New(clientset, "jobs")
	if err != nil {
		log.Fatal(err)
	}
	defer coord.Close()
	ecfg := tenure.DefaultConfig()
	ecfg.Key = "scheduler"
	elector, err := tenure.NewElector(coord, ecfg)
	if err != nil {
		log.Fatal(err)
	}
	err = elector.Run(ctx, func(ctx context.Context, term *tenure.Term) error {
		log.Printf("leading with token %d", term.Token())
		<-ctx.Done() // work until the term ends
		return nil
	})
	log.Print(err)
}

// A key that is a valid Lease name is its own Lease's name, which
// client-go's leaderelection can share; any other key gets a name of its
// own, with a hash of the key.
func ExampleLeaseName() {
	fmt.Println(kube.LeaseName("scheduler"))
	fmt.Println(kube.LeaseName("orders/17"))
	// Output:
	// scheduler
	// orders-17-0d2162c13cf8cad7
}

// New names every argument and option that cannot work; the namespace has
// no default.
func ExampleNew_invalid() {
	clientset, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:6443"}) // no request yet
	if err != nil {
		log.Fatal(err)
	}
	_, err = kube.New(clientset, "", kube.WithMaxDrift(0.5))
	fmt.Println(errors.Is(err, tenure.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// true
	// tenure: invalid config: kube: the namespace is empty: name the namespace that holds the Leases
	// tenure: invalid config: kube: WithMaxDrift (0.5) must be in [0, 0.5)
}
