package node

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/store"
)

func (a *Agent) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(a.opts.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := a.heartbeat(ctx); err != nil && ctx.Err() == nil {
				a.log.Warn("heartbeat failed", "err", err)
			}
		}
	}
}

// heartbeat creates or refreshes this host's Node: capacity from the
// hypervisor, the Ready condition and the heartbeat time. Spec (taints,
// unschedulable) belongs to the operator and is never touched.
func (a *Agent) heartbeat(ctx context.Context) error {
	hctx, cancel := context.WithTimeout(ctx, a.opts.HeartbeatInterval)
	defer cancel()
	host, hostErr := a.opts.Hypervisor.Host(hctx)
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
		if err := a.opts.Store.Create(ctx, n); err != nil {
			return err
		}
	} else if err != nil {
		return err
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
		n.Status.Capacity = capacity
		n.Status.Allocatable = capacity.DeepCopy()
		n.Status.HostUUID = host.UUID
		n.Status.Hypervisor = host.Model
	}
	virtkit.SetCondition(&n.Status.Conditions, ready, now)
	n.Status.LastHeartbeatTime = &now
	return a.opts.Store.UpdateStatus(ctx, n)
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
