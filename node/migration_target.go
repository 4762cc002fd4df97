package node

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// targetRecheck is how often the target looks at a migration in flight
// when nothing else wakes it.
const targetRecheck = time.Second

// reconcileTarget is the target agent's side of a migration: prepare and
// publish the address, follow the arriving domain, take the VMI over once
// the source reports success, or clean up after a failure.
func (a *Agent) reconcileTarget(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string, info hypervisor.DomainInfo, exists bool) (reconcile.Result, error) {
	ms := vmi.Status.MigrationState
	switch {
	case ms.Failed || vmi.IsFinal() || vmi.DeletionTimestamp != nil:
		return reconcile.Result{}, a.abandonIncoming(ctx, vmi, domName, info, exists)
	case ms.Completed:
		// Taken over already (the VMI will name this node); nothing to do.
		return reconcile.Result{RequeueAfter: targetRecheck}, nil
	case ms.EndTimestamp != nil:
		if exists && info.State.IsActive() {
			return reconcile.Result{}, a.takeOver(ctx, vmi, domName, info)
		}
		// The source says it is done but the guest is not here (yet).
		return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, nil
	}
	if err := a.prepareTarget(ctx, vmi); err != nil {
		return reconcile.Result{}, err
	}
	before := vmi.Status.DeepCopy()
	ms = vmi.Status.MigrationState
	ms.TargetNodeAddress = a.opts.Migration.URI
	vmi.SetActivePod(a.podUID(vmi), a.opts.NodeName)
	if exists {
		ms.TargetNodeDomainDetected = true
		if info.State == hypervisor.StateRunning {
			a.activateTargetNetworks(ctx, vmi)
		}
		if info.State == hypervisor.StateRunning && ms.TargetNodeDomainReadyTimestamp == nil {
			now := a.now()
			ms.TargetNodeDomainReadyTimestamp = &now // post-copy: running here already
		}
	}
	if !reflect.DeepEqual(before, &vmi.Status) {
		if err := a.opts.Store.UpdateStatus(ctx, vmi); err != nil {
			return reconcile.Result{}, err
		}
		a.log.Info("migration target ready", "vmi", vmi.Namespace+"/"+vmi.Name, "address", ms.TargetNodeAddress)
		// The address is the node's own (its log has it): the event, which
		// the VMI's owner reads, names the node only.
		a.event(ctx, vmi, virtkit.EventTypeNormal, virtkit.EventReasonPreparingTarget, "Migrate", "Migration target prepared on node %s", a.opts.NodeName)
	}
	return reconcile.Result{RequeueAfter: targetRecheck}, nil
}

// prepareTarget creates what the arriving domain needs on this host and
// publishes the migration addresses on the Node object.
func (a *Agent) prepareTarget(ctx context.Context, vmi *virtkit.VirtualMachineInstance) error {
	if err := a.prepareTargetNetworks(ctx, vmi); err != nil {
		return err
	}
	if o := a.opts.RuntimeDirOwner; o != nil {
		if _, err := domain.MakeRuntimeDir(vmi, a.opts.Domain, o.UID, o.GID); err != nil {
			return fmt.Errorf("migration target runtime dir: %w", err)
		}
	}
	if err := a.createDownwardMetricsDisk(ctx, vmi, ""); err != nil {
		return err
	}
	return a.publishMigrationURIs(ctx)
}

// publishMigrationURIs writes the migration annotations on this agent's
// Node object when they differ.
func (a *Agent) publishMigrationURIs(ctx context.Context) error {
	for range 5 {
		n := &virtkit.Node{}
		if err := a.opts.Store.Get(ctx, store.Key{Name: a.opts.NodeName}, n); err != nil {
			return err
		}
		mo := a.opts.Migration
		if n.Annotations[MigrationURIAnnotation] == mo.URI && n.Annotations[MigrationDataURIAnnotation] == mo.DataURI {
			return nil
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[MigrationURIAnnotation] = mo.URI
		if mo.DataURI != "" {
			n.Annotations[MigrationDataURIAnnotation] = mo.DataURI
		} else {
			delete(n.Annotations, MigrationDataURIAnnotation)
		}
		err := a.opts.Store.Update(ctx, n)
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("node %s: publish migration URIs: %w", a.opts.NodeName, store.ErrConflict)
}

// takeOver makes this node the VMI's node after a successful migration:
// status.nodeName, the node label, activePods, and the end of the
// evacuation. From then on the ordinary reconcile runs the guest here.
func (a *Agent) takeOver(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string, info hypervisor.DomainInfo) error {
	a.activateTargetNetworks(ctx, vmi)
	me := a.opts.NodeName
	now := a.now()
	key := store.Key{Namespace: vmi.Namespace, Name: vmi.Name}
	uid := vmi.Status.MigrationState.MigrationUID
	completed := false // by this call's status write
	err := a.updateMigrationState(ctx, key, uid, func(v *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) bool {
		completed = false
		if ms.Failed || ms.Completed || ms.EndTimestamp == nil {
			return false
		}
		completed = true
		ms.Completed = true
		ms.TargetNodeDomainDetected = true
		if ms.TargetNodeDomainReadyTimestamp == nil {
			ms.TargetNodeDomainReadyTimestamp = &now
		}
		v.Status.NodeName = me
		v.Status.EvacuationNodeName = ""
		virtkit.RemoveCondition(&v.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested)
		v.Status.MigrationTransport = virtkit.MigrationTransportUnix
		for podUID, n := range v.Status.ActivePods {
			if n != me {
				v.RemoveActivePod(podUID)
			}
		}
		v.SetActivePod(a.podUID(v), me)
		return true
	})
	if err != nil {
		return err
	}
	// The event goes with the status that completes the migration, as
	// virt-handler records Migrated when it writes that status: a failure
	// of the label update below does not lose it.
	if completed {
		a.event(ctx, vmi, virtkit.EventTypeNormal, virtkit.EventReasonMigrated, "Migrate", "The VirtualMachineInstance migrated to node %s", a.opts.NodeName)
	}
	// Labels last, as the placement controller does: agents select their
	// VMIs by them, and by now the status names this node.
	for range 10 {
		v := &virtkit.VirtualMachineInstance{}
		if err := a.opts.Store.Get(ctx, key, v); err != nil {
			return ignoreGone(err)
		}
		if v.Status.NodeName != me {
			return nil
		}
		if v.Labels[virtkit.NodeNameLabel] == me && v.Labels[virtkit.MigrationTargetNodeNameLabel] == "" {
			break
		}
		if v.Labels == nil {
			v.Labels = map[string]string{}
		}
		v.Labels[virtkit.NodeNameLabel] = me
		delete(v.Labels, virtkit.MigrationTargetNodeNameLabel)
		err := a.opts.Store.Update(ctx, v)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrConflict) {
			return ignoreGone(err)
		}
	}
	a.log.Info("migration arrived: took over the VMI", "vmi", key.String(), "domain", domName, "state", info.State)
	a.Enqueue(key.Namespace, key.Name)
	return nil
}

// abandonIncoming removes the half-arrived domain of a failed migration and
// this node's activePods entry; the guest keeps running on the source.
func (a *Agent) abandonIncoming(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string, info hypervisor.DomainInfo, exists bool) error {
	if exists {
		live := !vmi.IsFinal() && vmi.DeletionTimestamp == nil
		if info.State == hypervisor.StateRunning && live {
			// A failed or aborted incoming guest is paused or gone; one that
			// runs here may be the only running copy (a job that completed
			// after its source agent lost track of it) while the VMI still
			// runs: keep it until the VMI has ended.
			a.log.Warn("not removing a running guest of a failed incoming migration", "domain", domName)
			return nil
		}
		// The VMI failed, ended or is being deleted: a guest that still
		// runs here is an orphan the control plane has given up on.
		a.log.Info("removing the domain of a failed incoming migration", "domain", domName, "state", info.State)
		if err := a.removeDomain(ctx, domName, info); err != nil {
			return err
		}
	}
	if vmi.Status.NodeName != a.opts.NodeName {
		a.releaseNetworks(ctx, vmi, "incoming migration abandoned")
	}
	if _, ok := vmi.Status.ActivePods[a.podUID(vmi)]; ok {
		key := store.Key{Namespace: vmi.Namespace, Name: vmi.Name}
		return a.updateMigrationState(ctx, key, vmi.Status.MigrationState.MigrationUID, func(v *virtkit.VirtualMachineInstance, _ *virtkit.VirtualMachineInstanceMigrationState) bool {
			if v.Status.NodeName == a.opts.NodeName {
				return false
			}
			return v.RemoveActivePod(a.podUID(v))
		})
	}
	return nil
}

func ignoreGone(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
