package node

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/internal/clockctx"
	"github.com/virtkit/virtkit/reconcile"
)

// gracePeriod is how long a deleted VMI's guest may take to power off after
// the first ACPI request: spec.terminationGracePeriodSeconds (KubeVirt's
// default 30 s when unset), or the VMI's deletionGracePeriodSeconds when a
// delete asked for a shorter one. A zero deletionGracePeriodSeconds is no
// such request: it is how a store marks any object with finalizers as
// deleting (Kubernetes does the same for custom resources, which have no
// graceful deletion), so it would turn every stop into a power cut. A
// forced stop shortens spec.terminationGracePeriodSeconds instead (virtctl
// stop --force --grace-period=0, restart --force).
func gracePeriod(vmi *virtkit.VirtualMachineInstance) time.Duration {
	secs := virtkit.DefaultGracePeriodSeconds
	if g := vmi.Spec.TerminationGracePeriodSeconds; g != nil {
		secs = *g
	}
	if d := vmi.DeletionGracePeriodSeconds; d != nil && *d > 0 && *d < secs {
		secs = *d
	}
	return time.Duration(max(secs, 0)) * time.Second
}

// shutdownAsks is when the guest of one VMI was first and last asked to
// power off.
type shutdownAsks struct {
	uid         types.UID
	first, last time.Time
}

// stopGuest stops the running guest of a deleted VMI as virt-handler does:
// it presses the guest's ACPI power button, presses it again every
// ShutdownPoll while the guest runs on (a guest still booting misses the
// request), and destroys the guest once the grace period has passed since
// the first request. A guest without ACPI, a paused one and one with no
// grace period left are destroyed at once. destroyed reports a destroy (the
// caller then reads the domain again); otherwise res says when to look
// again, unless the domain's lifecycle event comes first.
func (a *Agent) stopGuest(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string, info hypervisor.DomainInfo) (res reconcile.Result, destroyed bool, err error) {
	grace := gracePeriod(vmi)
	now := a.opts.Clock.Now()
	a.mu.Lock()
	asks, asked := a.shutdownSince[domName]
	a.mu.Unlock()
	if asked && asks.uid != vmi.UID {
		asks, asked = shutdownAsks{}, false // left by an earlier VMI of the name
	}
	left := grace
	if asked {
		left = grace - now.Sub(asks.first)
	}
	var why string
	switch {
	case !acpiEnabled(vmi):
		why = "the guest has no ACPI"
	case info.State == hypervisor.StatePaused:
		why = "the guest is paused"
	case grace == 0:
		why = "no grace period"
	case left <= 0:
		why = "grace period of " + grace.String() + " over"
	}
	if why == "" {
		if next := asks.last.Add(a.opts.ShutdownPoll); asked && now.Before(next) {
			// Asked recently (another change woke this reconcile): look
			// again when the next request or the end of the grace period
			// is due.
			return reconcile.Result{RequeueAfter: min(next.Sub(now), left)}, false, nil
		}
		wait := min(a.opts.ShutdownPoll, left)
		off := false
		if info.State != hypervisor.StateShutdown { // else already powering off
			if off, err = a.pressPowerButton(ctx, domName, wait); err != nil {
				return reconcile.Result{}, false, err
			}
		}
		if !asked {
			asks.uid, asks.first = vmi.UID, now
			a.log.Info("shutting down guest", "domain", domName, "grace", grace)
			a.event(ctx, vmi, virtkit.EventTypeNormal, virtkit.EventReasonShuttingDown, "Shutdown",
				"Signaled Graceful Shutdown (grace period %v)", grace)
		}
		asks.last = now
		a.mu.Lock()
		a.shutdownSince[domName] = asks
		a.mu.Unlock()
		if off {
			return reconcile.Result{}, true, nil
		}
		return reconcile.Result{RequeueAfter: wait}, false, nil
	}
	a.log.Info("destroying guest", "domain", domName, "why", why)
	a.event(ctx, vmi, virtkit.EventTypeNormal, virtkit.EventReasonDeleted, "Destroy",
		"VirtualMachineInstance stopping: %s, destroying the guest", why)
	if err := a.opts.Hypervisor.Destroy(ctx, domName); err != nil && !ignorable(err) {
		return reconcile.Result{}, false, err
	}
	return reconcile.Result{}, true, nil
}

// pressPowerButton asks the guest to power off. A hypervisor that can
// send the request alone ([hypervisor.ShutdownRequester]) does, and the
// guest's power-off arrives as a lifecycle event; on others Shutdown waits
// up to wait for the guest, and off reports that it stopped. A domain that
// stopped or vanished meanwhile is no error: its state tells.
func (a *Agent) pressPowerButton(ctx context.Context, domName string, wait time.Duration) (off bool, err error) {
	if sr, ok := a.opts.Hypervisor.(hypervisor.ShutdownRequester); ok {
		if err := sr.RequestShutdown(ctx, domName); err != nil && !ignorable(err) {
			return false, err
		}
		return false, nil
	}
	sctx, cancel := clockctx.WithTimeout(ctx, a.opts.Clock, wait)
	defer cancel()
	err = a.opts.Hypervisor.Shutdown(sctx, domName)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil, ignorable(err):
		return false, nil
	}
	return false, err
}
