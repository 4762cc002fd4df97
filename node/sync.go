package node

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// Reconcile brings one VMI's domain on this host in line with the VMI and
// writes what it observes into the VMI's status. It is level-triggered:
// hypervisor events, VMI changes and timers all lead here.
func (a *Agent) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	domName := DomainName(req.Namespace, req.Name)
	vmi := &virtkit.VirtualMachineInstance{}
	if err := a.opts.Store.Get(ctx, store.Key{Namespace: req.Namespace, Name: req.Name}, vmi); err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			return reconcile.Result{}, err
		}
		vmi = nil
	}
	info, exists, err := a.domainInfo(ctx, domName)
	if err != nil {
		return reconcile.Result{}, err
	}
	// A domain of that name this agent does not own (someone else's guest
	// on a shared host, another node's) is left alone: for this VMI it is
	// as if there were none, but its name cannot be used.
	nameTaken := false
	if exists {
		mine, why, err := a.classify(ctx, domName, info, vmi)
		if errors.Is(err, hypervisor.ErrNotFound) {
			exists = false
		} else if err != nil {
			return reconcile.Result{}, err
		} else if !mine && a.isStaleLeftover(ctx, domName, info, vmi) {
			// A shut-off domain of a VMI that no longer exists (or of an
			// earlier incarnation of it), left behind by another node's
			// agent (a migration away from here, say): nobody will ever
			// start it again, and it would take the VMI's name forever.
			a.log.Info("removing the stale domain of a VMI that no longer exists", "domain", domName, "why", why)
			if err := a.removeDomain(ctx, domName, info); err != nil {
				return reconcile.Result{}, err
			}
			exists = false
		} else if !mine {
			exists, nameTaken = false, true
			if vmi != nil && (a.owns(vmi) || a.isIncomingMigration(vmi)) && !vmi.IsFinal() && vmi.DeletionTimestamp == nil && a.firstTaken(domName, string(vmi.UID)+" "+why) {
				a.log.Warn("VMI's domain name is taken by a domain this agent does not own", "vmi", req.Namespace+"/"+req.Name, "why", why)
			}
		}
	} else {
		a.mu.Lock()
		delete(a.foreign, domName)
		delete(a.owned, domName)
		delete(a.domainFacts, domName)
		delete(a.takenSaid, domName)
		a.mu.Unlock()
	}

	if res, handled, err := a.reconcileMigration(ctx, vmi, domName, info, exists); handled {
		return res, err
	}
	if vmi == nil || !a.owns(vmi) {
		if exists && !a.isIncomingMigration(vmi) {
			// No VMI here wants this domain of this node: a leftover of a
			// deleted VMI or of a VMI that was moved while this agent was
			// away.
			a.log.Info("removing orphaned domain", "domain", domName)
			return reconcile.Result{}, a.removeDomain(ctx, domName, info)
		}
		return reconcile.Result{}, nil
	}
	if exists {
		if f, err := a.facts(ctx, domName, info.UUID); err == nil && f.vmiUID != "" && f.vmiUID != string(vmi.UID) {
			uid := f.vmiUID
			// A domain of an earlier VMI with the same name (the VM was
			// restarted while this agent was down): never run two copies.
			a.log.Info("removing domain of an earlier VMI incarnation", "domain", domName, "uid", uid)
			if err := a.removeDomain(ctx, domName, info); err != nil {
				return reconcile.Result{}, err
			}
			exists = false
		}
	}

	if vmi.DeletionTimestamp != nil {
		return a.stopForDeletion(ctx, vmi, domName, info, exists)
	}
	if vmi.IsFinal() {
		return reconcile.Result{}, a.cleanUpFinal(ctx, vmi, domName, info, exists)
	}
	if !exists {
		switch vmi.Status.Phase {
		case virtkit.Scheduled:
			if nameTaken {
				return reconcile.Result{}, fmt.Errorf("VMI %s/%s: domain %s: %w", vmi.Namespace, vmi.Name, domName, ErrDomainNotOwned)
			}
			return a.startDomain(ctx, vmi, domName)
		case virtkit.Running:
			// The domain vanished under a running VMI.
			return reconcile.Result{}, a.finish(ctx, vmi, virtkit.Failed, "domain disappeared from the host")
		}
		return reconcile.Result{}, nil
	}
	if !info.State.IsActive() {
		if vmi.Status.Phase == virtkit.Scheduled && neverRan(info) {
			// Defined before an agent restart but not started yet.
			return a.startDomain(ctx, vmi, domName)
		}
		phase, ok := phaseFor(info.State, info.Reason, acpiEnabled(vmi))
		why := fmt.Sprintf("domain %s (%s)", info.State, info.Reason)
		if a.wasFenced(domName) {
			// Never restarted here: the controller may run it elsewhere.
			phase, ok, why = virtkit.Failed, true, fmt.Sprintf("fenced: the node agent could not renew its heartbeat within %v", a.opts.FenceTimeout)
		}
		if !ok {
			return reconcile.Result{}, nil
		}
		if err := a.finish(ctx, vmi, phase, why); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, a.cleanUpFinal(ctx, vmi, domName, info, true)
	}
	if err := a.actOnRequests(ctx, vmi, domName, &info); err != nil {
		return reconcile.Result{}, err
	}
	if err := a.syncHotplugResources(ctx, vmi, domName, &info); err != nil {
		return reconcile.Result{}, err
	}
	if err := a.updateRunningStatus(ctx, vmi, domName, info); err != nil {
		return reconcile.Result{}, err
	}
	if err := a.syncHotplugVolumes(ctx, vmi, domName); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: a.statusResync(vmi)}, nil
}

// owns reports whether the VMI's domain belongs on this host.
func (a *Agent) owns(vmi *virtkit.VirtualMachineInstance) bool {
	return vmi.Status.NodeName == a.opts.NodeName
}

// isIncomingMigration reports whether this host is the target of the VMI's
// migration in flight, so a domain here is the arriving guest.
func (a *Agent) isIncomingMigration(vmi *virtkit.VirtualMachineInstance) bool {
	if vmi == nil || vmi.Status.MigrationState == nil {
		return false
	}
	ms := vmi.Status.MigrationState
	return ms.TargetNode == a.opts.NodeName && !ms.Completed && !ms.Failed
}

func neverRan(info hypervisor.DomainInfo) bool {
	return info.Reason == hypervisor.ReasonUnknown || info.Reason == "" || info.State == hypervisor.StateNoState
}

func (a *Agent) domainInfo(ctx context.Context, name string) (hypervisor.DomainInfo, bool, error) {
	info, err := a.opts.Hypervisor.Info(ctx, name)
	if errors.Is(err, hypervisor.ErrNotFound) {
		return hypervisor.DomainInfo{}, false, nil
	}
	if err != nil {
		return hypervisor.DomainInfo{}, false, err
	}
	return info, true, nil
}

// removeDomain destroys (if running) and undefines a domain.
func (a *Agent) removeDomain(ctx context.Context, name string, info hypervisor.DomainInfo) error {
	if info.State.IsActive() {
		if err := a.opts.Hypervisor.Destroy(ctx, name); err != nil && !ignorable(err) {
			return err
		}
	}
	if err := a.opts.Hypervisor.Undefine(ctx, name); err != nil && !ignorable(err) {
		return err
	}
	a.stopShares(name)
	a.stopDownwardMetrics(name)
	if a.opts.GuestInfo != nil {
		a.opts.GuestInfo.Forget(name)
	}
	a.mu.Lock()
	delete(a.shutdownSince, name)
	delete(a.domainFacts, name)
	delete(a.owned, name)
	delete(a.fenced, name)
	a.mu.Unlock()
	return nil
}

func ignorable(err error) bool {
	return errors.Is(err, hypervisor.ErrNotFound) || errors.Is(err, hypervisor.ErrInvalidState)
}

// startDomain puts the finalizer on the VMI, builds, defines and starts its
// domain. The VMI turns Running when the domain reports it.
func (a *Agent) startDomain(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string) (reconcile.Result, error) {
	// A fenced agent starts nothing: the controller may be restarting the
	// VMI elsewhere. A fence during the start undoes it (undoIfFenced).
	gen, ok := a.lease.admit(a.opts.Clock.Now(), a.opts.FenceTimeout)
	if !ok {
		return reconcile.Result{}, fmt.Errorf("VMI %s/%s: not starting domain %s: %w", vmi.Namespace, vmi.Name, domName, ErrFenced)
	}
	_, pauseAsked := vmi.Annotations[virtkit.PauseRequestAnnotation]
	startPaused := vmi.ShouldStartPaused() && !vmi.HasReachedPhase(virtkit.Running)
	if !slices.Contains(vmi.Finalizers, Finalizer) || startPaused && !pauseAsked {
		if !slices.Contains(vmi.Finalizers, Finalizer) {
			vmi.Finalizers = append(vmi.Finalizers, Finalizer)
		}
		if startPaused && !pauseAsked {
			// startStrategy Paused is a user pause from the first moment:
			// the guest stays paused until someone unpauses it.
			if vmi.Annotations == nil {
				vmi.Annotations = map[string]string{}
			}
			vmi.Annotations[virtkit.PauseRequestAnnotation] = "true"
		}
		if err := a.opts.Store.Update(ctx, vmi); err != nil {
			return reconcile.Result{}, err
		}
	}
	if o := a.opts.RuntimeDirOwner; o != nil {
		if _, err := domain.MakeRuntimeDir(vmi, a.opts.Domain, o.UID, o.GID); err != nil {
			return reconcile.Result{}, fmt.Errorf("runtime dir: %w", err)
		}
	}
	if wait := a.pullBackOff(vmi); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	// A refusal of the cluster's configuration (a feature gate off) is
	// reported as a domain this node cannot build, as is a host device it
	// lacks.
	opts, err := a.domainOptions(ctx, vmi)
	if err == nil {
		opts.HostDevices, err = a.assignHostDevices(ctx, vmi, domName)
	}
	if err != nil && !errors.Is(err, domain.ErrUnsupported) {
		return reconcile.Result{}, err
	}
	var built *libvirtxml.Domain
	if err == nil {
		built, err = domain.BuildContext(ctx, vmi, opts)
	}
	var xml string
	if err == nil {
		xml, err = built.Marshal()
	}
	if errors.Is(err, domain.ErrImagePull) {
		return a.imagePullFailed(ctx, vmi, err)
	}
	if errors.Is(err, domain.ErrConfigSourceMissing) {
		return a.configMissing(ctx, vmi, err)
	}
	if err != nil && ctx.Err() != nil {
		// The reconcile's deadline ended the build (a registry pull goes on
		// in the background and the next attempt joins it): try again.
		return reconcile.Result{}, err
	}
	a.imagePulled(vmi)
	if err == nil {
		err = a.startShares(ctx, vmi, domName)
		if errors.Is(err, domain.ErrConfigSourceMissing) {
			return a.configMissing(ctx, vmi, err)
		}
		if err != nil && !errors.Is(err, domain.ErrUnsupported) && !errors.Is(err, ErrNoVirtiofsd) {
			return reconcile.Result{}, err // a process that did not start: retry
		}
	}
	if err == nil {
		if err = a.startDownwardMetrics(ctx, vmi, domName); err != nil {
			a.stopShares(domName)
			return reconcile.Result{}, err
		}
	}
	if err != nil {
		// The VMI cannot be expressed on this host: retrying will not help.
		a.log.Warn("cannot build domain", "vmi", vmi.Namespace+"/"+vmi.Name, "err", err)
		msg := tenantMessage(err, "this node cannot run the VMI (the node's log has the details)")
		// As KubeVirt's node agent does on a failed sync: the
		// Synchronized condition carries the reason, naming the field.
		virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceSynchronized,
			Status: virtkit.ConditionFalse, Reason: SyncFailedReason, Message: guestagent.Sanitize("cannot build domain: "+msg, 1024)}, a.now())
		if ferr := a.finish(ctx, vmi, virtkit.Failed, "cannot build domain: "+msg); ferr != nil {
			return reconcile.Result{}, ferr
		}
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	if err := a.defineDomain(ctx, vmi, xml); err != nil {
		a.stopShares(domName)
		a.stopDownwardMetrics(domName)
		return reconcile.Result{}, err
	}
	a.rememberBuilt(domName, built) // a new definition: its facts are what was built
	if err := a.bootDomain(ctx, vmi, domName, startPaused); err != nil {
		return reconcile.Result{}, err
	}
	if err := a.undoIfFenced(ctx, domName, gen); err != nil {
		return reconcile.Result{}, err
	}
	a.log.Info("started domain", "domain", domName, "paused", startPaused)
	info, exists, err := a.domainInfo(ctx, domName)
	if err != nil || !exists {
		return reconcile.Result{RequeueAfter: time.Second}, err
	}
	if err := a.updateRunningStatus(ctx, vmi, domName, info); err != nil {
		return reconcile.Result{}, err
	}
	if err := a.syncHotplugVolumes(ctx, vmi, domName); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: a.statusResync(vmi)}, nil
}

// stopForDeletion stops a deleted VMI's guest (stopGuest: ACPI, then a
// destroy once the grace period is over) and then releases the VMI.
func (a *Agent) stopForDeletion(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string, info hypervisor.DomainInfo, exists bool) (reconcile.Result, error) {
	if exists && info.State.IsActive() {
		res, stopped, err := a.stopGuest(ctx, vmi, domName, info)
		if err != nil || !stopped {
			return res, err
		}
		info, exists, _ = a.domainInfo(ctx, domName)
		if exists && info.State.IsActive() {
			return reconcile.Result{RequeueAfter: a.opts.ShutdownPoll}, nil
		}
	}
	if exists && !vmi.IsFinal() && !info.State.IsActive() {
		if phase, ok := phaseFor(info.State, info.Reason, acpiEnabled(vmi)); ok {
			if err := a.finish(ctx, vmi, phase, "deleted"); err != nil {
				return reconcile.Result{}, err
			}
		}
	} else if !exists && !vmi.IsFinal() && vmi.Status.Phase == virtkit.Running {
		if err := a.finish(ctx, vmi, virtkit.Succeeded, "deleted"); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, a.cleanUpFinal(ctx, vmi, domName, info, exists)
}

// cleanUpFinal removes the domain of a VMI that has stopped and releases
// the VMI by removing the agent's finalizer.
func (a *Agent) cleanUpFinal(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string, info hypervisor.DomainInfo, exists bool) error {
	if exists {
		if err := a.removeDomain(ctx, domName, info); err != nil {
			return err
		}
	}
	a.releaseNetworks(ctx, vmi, "guest gone")
	if len(vmi.Status.ActivePods) > 0 {
		fresh := vmi.DeepCopy()
		if fresh.RemoveActivePod(a.podUID(vmi)) {
			if err := a.opts.Store.UpdateStatus(ctx, fresh); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			vmi = fresh
		}
	}
	if i := slices.Index(vmi.Finalizers, Finalizer); i >= 0 {
		vmi.Finalizers = slices.Delete(vmi.Finalizers, i, i+1)
		if err := a.opts.Store.Update(ctx, vmi); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}

// SyncFailedReason is the Synchronized=False reason of a VMI whose domain
// this node cannot build (KubeVirt's value); the message says why, naming
// the field the node cannot honour.
const SyncFailedReason = "Synchronizing with the Domain failed."

// finish moves the VMI to a final phase with a reason.
func (a *Agent) finish(ctx context.Context, vmi *virtkit.VirtualMachineInstance, phase virtkit.VirtualMachineInstancePhase, reason string) error {
	if vmi.IsFinal() {
		return nil
	}
	now := a.now()
	vmi.SetPhase(phase, now)
	vmi.Status.Reason = guestagent.Sanitize(reason, 256)
	virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{
		Type: virtkit.VirtualMachineInstanceReady, Status: virtkit.ConditionFalse, Reason: virtkit.GuestNotRunningReason,
		Message: "Guest VM is not reported as running",
	}, now)
	virtkit.RemoveCondition(&vmi.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected)
	virtkit.RemoveCondition(&vmi.Status.Conditions, virtkit.VirtualMachineInstancePaused)
	a.log.Info("VMI finished", "vmi", vmi.Namespace+"/"+vmi.Name, "phase", phase, "reason", reason)
	if err := a.opts.Store.UpdateStatus(ctx, vmi); err != nil {
		return err
	}
	a.recordFinished(ctx, vmi, phase, reason)
	return nil
}

// podUID is the stable id of this host's domain instance of the VMI, the
// key of status.activePods (KubeVirt keys it by launcher pod UID).
func (a *Agent) podUID(vmi *virtkit.VirtualMachineInstance) types.UID {
	return PodUID(vmi, a.opts.NodeName)
}

// PodUID is the activePods key a node agent on node uses for vmi.
func PodUID(vmi *virtkit.VirtualMachineInstance, node string) types.UID {
	sum := sha1.Sum([]byte(string(vmi.UID) + "/" + node))
	h := hex.EncodeToString(sum[:16])
	return types.UID(h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32])
}
