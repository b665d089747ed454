package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/tenure-dev/tenure/kube"
)

// readSlack is how much earlier than its own watch shows it the failover
// benchmark allows the old Lease to end on Kubernetes: a contender may see
// the leader's last renewal a little before the benchmark's watch does.
const readSlack = 100 * time.Millisecond

// kubeFailoverImpls returns tenure and client-go's LeaderElector on the
// Kubernetes target, each on a Lease of its own, and a coordinator of the
// benchmark's own that watches both Leases for the whole run, so that it
// sees each renewal when it is written, and reads their leaders' leases.
func kubeFailoverImpls(ctx context.Context, o FailoverOptions) ([]*failImpl, error) {
	reader, err := o.kubeCoordinator()
	if err != nil {
		return nil, err
	}
	id := runID()
	base := childSpec{Kubeconfig: o.Kubeconfig, Namespace: o.Namespace, TTL: o.TTL, ClientGo: o.ClientGo}
	ten, peer := base, base
	ten.Impl, ten.Key, ten.Renew = "tenure", "bench-"+id+"-failover", o.RenewInterval
	peer.Impl, peer.Key = "client-go", "bench-"+id+"-client-go"
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	for _, key := range []string{ten.Key, peer.Key} {
		if _, err := reader.Watch(wctx, key); err != nil {
			stop()
			reader.Close()
			return nil, fmt.Errorf("bench: watch Lease %s: %w", key, err)
		}
	}
	return []*failImpl{
		{name: "tenure", spec: ten, lease: kubeLease(reader, ten.Key), close: func() {}},
		{name: "client-go", spec: peer, lease: kubeLease(reader, peer.Key), close: func() { stop(); reader.Close() }},
	}, nil
}

// kubeLease finds the holder of Lease key and reads how long its lease has
// left as the reader sees it: until the reader's first sight of the
// holder's last write plus the Lease's duration (without the drift
// allowance), less readSlack. ok is false once another holder, or nobody,
// holds it.
func kubeLease(reader *kube.Coordinator, key string) func(context.Context) (leftFunc, error) {
	return func(ctx context.Context) (leftFunc, error) {
		g, ok, err := reader.Leader(ctx, key)
		if err != nil || !ok {
			return nil, fmt.Errorf("bench: find the leader of Lease %s: %v, held %v", key, err, ok)
		}
		return func(ctx context.Context) (time.Duration, bool, error) {
			cur, ok, err := reader.Leader(ctx, key)
			if err != nil || !ok || cur.Holder != g.Holder || cur.TTL == 0 {
				return 0, false, err
			}
			return cur.TTL - readSlack, true, nil
		}, nil
	}
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
		fmt.Sprintf("floor on kubernetes: the benchmark's own first sight of the old leader's last write (it watches the Lease) plus the Lease's duration, less %s for a contender that saw it first", readSlack),
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
