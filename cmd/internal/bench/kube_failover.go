package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordv1 "k8s.io/api/coordination/v1"
	"k8s.io/klog/v2"

	"github.com/tenure-dev/tenure/kube"
)

// kubeFailoverImpls returns tenure and client-go's LeaderElector on the
// Kubernetes target, each on a Lease of its own, and a leaseLog of each
// Lease, read by a client of the benchmark's own for the whole run, that
// bounds when their leaders' leases can end.
func kubeFailoverImpls(ctx context.Context, o FailoverOptions) ([]*failImpl, error) {
	cs, ns, err := o.kubeClient()
	if err != nil {
		return nil, err
	}
	id := runID()
	base := childSpec{Kubeconfig: o.Kubeconfig, Namespace: o.Namespace, TTL: o.TTL, ClientGo: o.ClientGo}
	ten, peer := base, base
	ten.Impl, ten.Key, ten.Renew = "tenure", "bench-"+id+"-failover", o.RenewInterval
	peer.Impl, peer.Key = "client-go", "bench-"+id+"-client-go"
	lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	leases := cs.CoordinationV1().Leases(ns)
	var impls []*failImpl
	for _, im := range []struct {
		spec childSpec
		id   func(*coordv1.Lease) string
	}{{ten, resourceVersion}, {peer, clientGoRecord}} {
		lg := newLeaseLog(leases, kube.LeaseName(im.spec.Key), im.id)
		wg.Go(func() { lg.run(lctx) })
		impls = append(impls, &failImpl{name: im.spec.Impl, spec: im.spec, lease: lg.leader, close: func() {}})
	}
	impls[1].close = func() { stop(); wg.Wait() }
	return impls, nil
}

// childClientGo is a failover contender running client-go's
// LeaderElector, without ReleaseOnCancel (it is killed).
func childClientGo(ctx context.Context, t Target, s childSpec, out io.Writer, acting func()) error {
	// client-go's leaderelection logs every attempt through klog, a
	// process-wide logger, to stderr: this process is only the contender.
	klog.SetLogger(logr.Discard())
	cs, ns, err := t.kubeClient()
	if err != nil {
		return err
	}
	fmt.Fprintln(out, lineReady) // its first attempt follows at once
	done, err := runClientGo(ctx, cs, ns, s.Key, s.Holder, s.ClientGo, false, func(lctx context.Context) {
		acting()
		<-lctx.Done()
	})
	if err != nil {
		return err
	}
	<-done
	return nil
}

// kubeFailoverNotes say what the failover figures mean on Kubernetes.
func kubeFailoverNotes(o FailoverOptions) []string {
	return []string{
		fmt.Sprintf("kubernetes: the API server never expires a Lease; each contender waits, on its own clock, the Lease's duration after it first saw the holder's last write (tenure: plus 1%% drift allowance; client-go: it notices on its next poll, every RetryPeriod %s with jitter)", o.ClientGo.RetryPeriod),
		fmt.Sprintf("floor on kubernetes: the old leader's last write to the Lease was committed after the benchmark sent the last read that still returned an earlier version (it reads each Lease every %s, one read after another); the floor is that send time plus the write's leaseDurationSeconds, since no contender can see the write before it is committed", leasePoll),
		"client-go's contenders compare the record with whole-second times: a renewal in the same second as the one before it does not restart their wait, so client-go's floor counts from the first write of the old leader's last such record",
		fmt.Sprintf("renewal cadence: a lease renewed more often has more left at a crash; tenure renews every %s, client-go every RetryPeriod (%s)", renewCadence(o), o.ClientGo.RetryPeriod),
	}
}

// renewCadence is how often tenure's leader renews in the failover run.
func renewCadence(o FailoverOptions) time.Duration {
	if o.RenewInterval > 0 {
		return o.RenewInterval
	}
	return o.TTL / 3
}
