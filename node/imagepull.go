package node

import (
	"context"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/controller"
)

// Image pull back-off, as the kubelet's: 10 s doubling up to 5 min.
const (
	imagePullBackoffBase = 10 * time.Second
	imagePullBackoffMax  = 5 * time.Minute
)

// imagePullFailed reports a failed image pull on the VMI as KubeVirt shows
// a virt-launcher pod's: Synchronized=False with reason ErrImagePull on the
// first failure and ImagePullBackOff while it waits to retry, and requeues
// with back-off. The VMI stays Scheduled.
func (a *Agent) imagePullFailed(ctx context.Context, vmi *virtkit.VirtualMachineInstance, cause error) (controller.Result, error) {
	a.mu.Lock()
	if a.pullFailures == nil {
		a.pullFailures = map[string]int{}
	}
	n := a.pullFailures[string(vmi.UID)]
	a.pullFailures[string(vmi.UID)] = n + 1
	a.mu.Unlock()
	reason := virtkit.ErrImagePullReason
	if n > 0 {
		reason = virtkit.ImagePullBackOffReason
	}
	wait := imagePullBackoffBase << min(n, 5)
	wait = min(wait, imagePullBackoffMax)
	virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceSynchronized,
		Status: virtkit.ConditionFalse, Reason: reason, Message: cause.Error()}, a.now())
	if err := a.opts.Store.UpdateStatus(ctx, vmi); err != nil {
		return controller.Result{}, err
	}
	a.log.Warn("image pull failed", "vmi", vmi.Namespace+"/"+vmi.Name, "reason", reason, "retry", wait, "err", cause)
	a.event(ctx, vmi, virtkit.EventTypeWarning, reason, "Pull", "%v", cause)
	return controller.Result{RequeueAfter: wait}, nil
}

// imagePulled forgets a VMI's pull failures and clears their condition.
func (a *Agent) imagePulled(vmi *virtkit.VirtualMachineInstance) {
	a.mu.Lock()
	delete(a.pullFailures, string(vmi.UID))
	a.mu.Unlock()
	c := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceSynchronized)
	if c != nil && (c.Reason == virtkit.ErrImagePullReason || c.Reason == virtkit.ImagePullBackOffReason) {
		virtkit.RemoveCondition(&vmi.Status.Conditions, virtkit.VirtualMachineInstanceSynchronized)
	}
}
