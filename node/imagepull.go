package node

import (
	"context"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
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
func (a *Agent) imagePullFailed(ctx context.Context, vmi *virtkit.VirtualMachineInstance, cause error) (reconcile.Result, error) {
	a.mu.Lock()
	if a.pullFailures == nil {
		a.pullFailures = map[string]pullFailure{}
	}
	// VMIs deleted while backing off leave entries behind: drop those
	// whose back-off ended long ago.
	now := a.opts.Clock.Now()
	for uid, f := range a.pullFailures {
		if now.Sub(f.retryAt) > 2*imagePullBackoffMax {
			delete(a.pullFailures, uid)
		}
	}
	f := a.pullFailures[string(vmi.UID)]
	reason := virtkit.ErrImagePullReason
	if f.count > 0 {
		reason = virtkit.ImagePullBackOffReason
	}
	wait := min(imagePullBackoffBase<<min(f.count, 5), imagePullBackoffMax)
	a.pullFailures[string(vmi.UID)] = pullFailure{count: f.count + 1, retryAt: now.Add(wait)}
	a.mu.Unlock()
	if virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceSynchronized,
		Status: virtkit.ConditionFalse, Reason: reason, Message: tenantMessage(cause, "image pull failed (the node's log has the details)")}, a.now()) {
		if err := a.opts.Store.UpdateStatus(ctx, vmi); err != nil {
			return reconcile.Result{}, err
		}
	}
	a.log.Warn("image pull failed", "vmi", vmi.Namespace+"/"+vmi.Name, "reason", reason, "retry", wait, "err", cause)
	a.event(ctx, vmi, virtkit.EventTypeWarning, reason, "Pull", "%s", tenantMessage(cause, "image pull failed (the node's log has the details)"))
	return reconcile.Result{RequeueAfter: wait}, nil
}

// pullFailure is a VMI's failed pulls and when the next may start.
type pullFailure struct {
	count   int
	retryAt time.Time
}

// pullBackOff returns how long a VMI whose pull failed still waits before
// the next attempt (0: try now). Status writes wake the VMI's reconcile;
// they must not cut the back-off short.
func (a *Agent) pullBackOff(vmi *virtkit.VirtualMachineInstance) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, ok := a.pullFailures[string(vmi.UID)]
	if !ok {
		return 0
	}
	return max(f.retryAt.Sub(a.opts.Clock.Now()), 0)
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
