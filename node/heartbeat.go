package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/internal/clockctx"
	"github.com/virtkit/virtkit/store"
)

func (a *Agent) heartbeatLoop(ctx context.Context) {
	t := a.opts.Clock.NewTicker(a.opts.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if err := a.heartbeat(ctx, a.renewalTimeout()); err != nil && ctx.Err() == nil {
				a.log.Warn("heartbeat failed", "err", err)
			}
		}
	}
}

// scanLoop looks at the whole host every ResyncPeriod, so the list of
// foreign domains stays current.
func (a *Agent) scanLoop(ctx context.Context) {
	t := a.opts.Clock.NewTicker(a.opts.ResyncPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			sctx, cancel := clockctx.WithTimeout(ctx, a.opts.Clock, a.opts.ReconcileTimeout)
			if err := a.scanHost(sctx, false); err != nil && ctx.Err() == nil {
				a.log.Warn("looking at the host's domains", "err", err)
			}
			cancel()
		}
	}
}

// heartbeat renews this host's Node (creating it again if it is gone):
// capacity from the hypervisor, the Ready condition, the fence timeout and
// the heartbeat time. Spec (taints, unschedulable) belongs to the operator
// and is never touched. A renewal that succeeds moves the fence deadline
// and pets the watchdog; one after a fence ends it.
func (a *Agent) heartbeat(ctx context.Context, timeout time.Duration) error {
	start := a.opts.Clock.Now()
	rctx, cancel := clockctx.WithTimeout(ctx, a.opts.Clock, timeout)
	defer cancel()
	value, err := a.writeHeartbeat(rctx)
	if err != nil {
		return err
	}
	if a.opts.FenceTimeout <= 0 {
		return nil
	}
	left, wasFenced := a.lease.renewed(start, value, a.opts.Clock.Now(), a.opts.FenceTimeout)
	if wasFenced {
		a.log.Warn("heartbeat renewed after a fence: guests destroyed by the fence stay stopped")
		// The fenced guests' VMIs are reported failed by their reconciles.
		a.enqueueFenced()
	}
	if wd := a.opts.Watchdog; wd != nil && left > 0 {
		if err := wd.PetWatchdog(rctx, left+a.watchdogSlack()); err != nil {
			return fmt.Errorf("petting the watchdog: %w", err)
		}
	}
	return nil
}

// writeHeartbeat writes the Node and returns the heartbeat value written.
func (a *Agent) writeHeartbeat(ctx context.Context) (time.Time, error) {
	host, hostErr := a.opts.Hypervisor.Host(ctx)
	var cpu, platform map[string]string
	if hostErr == nil {
		cpu = a.cpuLabels(ctx)
		platform = a.launchSecurityLabels(ctx)
	}
	var err error
	for range 3 {
		var value time.Time
		value, err = a.writeHeartbeatOnce(ctx, host, hostErr, cpu, platform)
		if !errors.Is(err, store.ErrConflict) {
			return value, err
		}
	}
	return time.Time{}, err
}

// writeHeartbeatOnce writes the Node once: its labels (cpu and platform:
// the host CPU's and launch security's, nil where unknown), its capacity
// and its Ready condition.
func (a *Agent) writeHeartbeatOnce(ctx context.Context, host hypervisor.HostInfo, hostErr error, cpu, platform map[string]string) (time.Time, error) {
	now := a.now()
	n := &virtkit.Node{}
	err := a.opts.Store.Get(ctx, store.Key{Name: a.opts.NodeName}, n)
	if errors.Is(err, store.ErrNotFound) {
		n = &virtkit.Node{
			TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.VirtkitAPIVersion, Kind: virtkit.KindNode},
			ObjectMeta: metav1.ObjectMeta{Name: a.opts.NodeName, Labels: map[string]string{}},
		}
		for k, v := range a.opts.Labels {
			n.Labels[k] = v
		}
		n.Labels[virtkit.HostnameLabel] = a.opts.NodeName
		n.Labels[virtkit.NodeSchedulable] = "true"
		applyCPULabels(n, cpu)
		applyLaunchSecurityLabels(n, platform)
		a.setFenceAnnotation(n)
		a.setMigrationUnsupported(n)
		if err := a.opts.Store.Create(ctx, n); err != nil {
			return time.Time{}, err
		}
		a.log.Info("registered the Node")
	} else if err != nil {
		return time.Time{}, err
	} else if cpuChanged, platformChanged, fenceChanged := applyCPULabels(n, cpu), applyLaunchSecurityLabels(n, platform), a.setFenceAnnotation(n); a.setMigrationUnsupported(n) || fenceChanged || cpuChanged || platformChanged {
		if err := a.opts.Store.Update(ctx, n); err != nil {
			return time.Time{}, err
		}
	}

	ready := virtkit.Condition{Type: virtkit.NodeReady, Status: virtkit.ConditionTrue, Reason: virtkit.NodeReasonAgentReady,
		Message: "node agent is posting ready status"}
	if hostErr != nil {
		ready = virtkit.Condition{Type: virtkit.NodeReady, Status: virtkit.ConditionFalse, Reason: virtkit.NodeReasonHypervisorUnreachable,
			Message: guestagent.Sanitize(hostErr.Error(), 256)}
	} else {
		capacity := virtkit.ResourceList{
			virtkit.ResourceCPU:    *resource.NewQuantity(int64(host.CPUs), resource.DecimalSI),
			virtkit.ResourceMemory: *resource.NewQuantity(int64(host.MemoryBytes), resource.BinarySI),
		}
		a.addDeviceCapacity(ctx, capacity)
		n.Status.Capacity = capacity
		n.Status.Allocatable = capacity.DeepCopy()
		n.Status.HostUUID = host.UUID
		n.Status.Hypervisor = host.Model
	}
	virtkit.SetCondition(&n.Status.Conditions, ready, now)
	n.Status.LastHeartbeatTime = &now
	return now.Time, a.opts.Store.UpdateStatus(ctx, n)
}

// setFenceAnnotation puts this agent's fence timeout on n (or removes it
// when fencing is off) and reports whether n changed.
func (a *Agent) setFenceAnnotation(n *virtkit.Node) bool {
	old, had := n.Annotations[virtkit.FenceTimeoutAnnotation]
	if a.opts.FenceTimeout <= 0 {
		if had {
			delete(n.Annotations, virtkit.FenceTimeoutAnnotation)
		}
		return had
	}
	want := a.opts.FenceTimeout.String()
	if had && old == want {
		return false
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[virtkit.FenceTimeoutAnnotation] = want
	return true
}

// enqueueFenced asks for a reconcile of every domain fencing destroyed.
func (a *Agent) enqueueFenced() {
	a.mu.Lock()
	names := make([]string, 0, len(a.fenced))
	for name := range a.fenced {
		names = append(names, name)
	}
	a.mu.Unlock()
	for _, name := range names {
		if ns, n, ok := SplitDomainName(name); ok {
			a.Enqueue(ns, n)
		}
	}
}

// MarkStopped sets the Node's Ready condition to False (reason
// AgentStopped), for a clean shutdown of the agent's process.
func (a *Agent) MarkStopped(ctx context.Context) error {
	n := &virtkit.Node{}
	if err := a.opts.Store.Get(ctx, store.Key{Name: a.opts.NodeName}, n); err != nil {
		return err
	}
	virtkit.SetCondition(&n.Status.Conditions, virtkit.Condition{Type: virtkit.NodeReady, Status: virtkit.ConditionFalse,
		Reason: virtkit.NodeReasonAgentStopped, Message: "node agent stopped"}, a.now())
	return a.opts.Store.UpdateStatus(ctx, n)
}
