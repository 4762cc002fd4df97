package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/internal/backoff"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// VM condition reasons set by the VM reconciler.
const (
	// ReasonFailedCreate: the VMI could not be created (Failure condition).
	ReasonFailedCreate = "FailedCreate"
	// ReasonFailedDelete: the VMI could not be deleted (Failure condition).
	ReasonFailedDelete = "FailedDelete"
	// ReasonInvalidRunStrategy: spec.running and spec.runStrategy conflict.
	ReasonInvalidRunStrategy = "InvalidRunStrategy"
)

// VMReconciler gives VirtualMachines KubeVirt's semantics: it
// creates and deletes the VM's VMI according to the run strategy and the
// queued state change requests, delays automatic starts after failed ones
// (status.startFailure), and keeps the VM status current: created, ready,
// printableStatus, runStrategy, observed/desiredGeneration, and the
// conditions Ready (False/VMINotExists without a VMI), Failure (a sync
// error), RestartRequired (the template changed under a running VMI in a
// way it cannot follow; under KubeVirt's LiveUpdate rollout a change of
// cpu.sockets or memory.guest within the VMI's maxima is written to the
// VMI instead, and its node agent hot-plugs it) and
// copies of the VMI's conditions (Paused, LiveMigratable, ...).
//
// The VMI is the template with name = VM name, the template's labels and
// annotations, a controller owner reference, the finalizer
// kubevirt.io/virtualMachineControllerFinalize, the annotation
// kubevirt.io/vm-generation, firmware.uuid = UUIDv5 of the VM name when
// unset, and ReconcilerOptions.Defaults applied. The reconciler itself
// deletes the VMI of a deleted VM (as KubeVirt's does) unless the VM is
// deleted with the orphan propagation policy: then it only drops its
// finalizer from the VMI and leaves the rest to the [GarbageCollector].
//
// One deliberate difference from KubeVirt: a VMI that was deleted (stopped
// on purpose) before it ever ran is not counted as a failed start.
type VMReconciler struct {
	o   ReconcilerOptions
	own *ownWrites // the VMs and VMIs this reconciler wrote

	// deferred remembers since when a VM's status write has been held
	// back because only mirrored conditions of a VMI in hand-off changed.
	mu       sync.Mutex
	deferred map[store.Key]time.Time
}

// handOffFlush bounds how long a VM status write may be held back while
// its VMI sits in Scheduled (the node agent is about to start it, and its
// Running write will carry the conditions along).
const handOffFlush = 5 * time.Second

var _ reconcile.Reconciler = (*VMReconciler)(nil)

// NewVMReconciler returns the VM reconciler.
func NewVMReconciler(o ReconcilerOptions) (*VMReconciler, error) {
	o, err := o.withDefaults("vm")
	if err != nil {
		return nil, err
	}
	own := newOwnWrites()
	o.Store = recordingStore{Store: o.Store, own: own, cache: o.Cache}
	return &VMReconciler{o: o, own: own, deferred: map[store.Key]time.Time{}}, nil
}

// Watches returns what the reconciler must be fed: VMs, and VMIs mapped to
// the VM that controls them. The events of its own writes are skipped.
func (r *VMReconciler) Watches() []reconcile.Watch {
	return []reconcile.Watch{
		{NewList: vmList, Map: r.own.skipOwn(reconcile.ObjectKey)},
		{NewList: vmiList, Map: r.own.skipOwn(reconcile.ControllerOwner(virtkit.KindVirtualMachine))},
		{NewList: dataVolumeList, Map: reconcile.ControllerOwner(virtkit.KindVirtualMachine)},
		// A volume migration's progress (its VMI's name is its VM's).
		{NewList: migrationList, Map: volumeMigrationVM},
	}
}

// vmSync carries one reconcile's facts and decisions.
type vmSync struct {
	vm  *virtkit.VirtualMachine
	vmi *virtkit.VirtualMachineInstance // nil if none (or not ours)
	now metav1.Time
	// orig is the status as stored, to decide whether to write.
	orig *virtkit.VirtualMachineStatus

	// metaDirty: vm's metadata changed (the finalizer) and is written with
	// the status.
	metaDirty  bool
	createdVMI bool  // created in this sync (creation expected, not yet seen)
	deletedVMI bool  // deletion requested in this sync
	syncErr    error // recorded as the Failure condition
	failReason string
	requeue    time.Duration
	// restartRequired is the RestartRequired condition's message (none
	// when empty), once restartChecked (see syncLiveUpdate).
	restartRequired string
	restartChecked  bool
	// restartReason is the RestartRequired condition's reason when it is
	// not the generic one.
	restartReason string
}

// Reconcile implements Reconciler.
func (r *VMReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := keyOf(req)
	vm := &virtkit.VirtualMachine{}
	found, err := getOptional(ctx, r.o.Store, key, vm)
	if err != nil {
		return reconcile.Result{}, err
	}
	// The VMI is only read here; the few paths that write it copy it
	// first (it may be the shared cache's object).
	vmi, hasVMI, err := r.readVMI(ctx, key)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !found {
		r.clearDeferred(key)
		r.own.forget(virtkit.KindVirtualMachine, key)
		if !hasVMI {
			r.own.forget(virtkit.KindVirtualMachineInstance, key)
		}
		// No garbage collector: a VMI whose VM is gone is deleted here.
		if hasVMI && controlledByVMNamed(vmi, req.Name) {
			// Check the store's VMI: the cache's may predate the garbage
			// collector orphaning it.
			fresh := &virtkit.VirtualMachineInstance{}
			found, err := getOptional(ctx, r.o.Store, key, fresh)
			if err != nil || !found || !controlledByVMNamed(fresh, req.Name) {
				return reconcile.Result{}, err
			}
			_, err = r.releaseAndDelete(ctx, fresh)
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, nil
	}
	if hasVMI {
		ref := controllerOf(vmi)
		switch {
		case ref == nil && vm.DeletionTimestamp != nil:
			// An orphan (maybe orphaned by this VM's own deletion): a VM
			// being deleted adopts nothing.
		case ref == nil:
			// Adopt an orphan of the same name, as KubeVirt does.
			vmi = vmi.DeepCopy()
			vmi.OwnerReferences = append(vmi.OwnerReferences, newControllerRef(vm, virtkit.KindVirtualMachine))
			if err := r.o.Store.Update(ctx, vmi); err != nil {
				return reconcile.Result{}, err
			}
		case ref.Kind == virtkit.KindVirtualMachine && ref.UID != vm.UID:
			// Left over from an earlier VM of the same name: collect it.
			if _, err := r.releaseAndDelete(ctx, vmi); err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{RequeueAfter: time.Second}, nil
		case ref.UID != vm.UID:
			hasVMI = false // controlled by something else; creation will fail
		}
	}
	s := &vmSync{vm: vm, now: r.o.now(), orig: vm.Status.DeepCopy()}
	if hasVMI {
		s.vmi = vmi
	}

	if vm.DeletionTimestamp != nil {
		return r.syncDeleted(ctx, s)
	}
	// The finalizer goes out with the status write below (one write for
	// both where the store allows it).
	s.metaDirty = addFinalizer(vm, virtkit.VirtualMachineControllerFinalizer)
	if err := r.releaseVMI(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.syncRunStrategy(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.syncVolumeHotplug(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.syncLiveUpdate(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.syncVolumeMigration(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.updateStatus(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	if s.syncErr != nil {
		return reconcile.Result{}, s.syncErr
	}
	return reconcile.Result{RequeueAfter: s.requeue}, nil
}

// releaseVMI accounts a final or deleted VMI for start-failure backoff and
// then drops the VM controller's finalizer from it.
func (r *VMReconciler) releaseVMI(ctx context.Context, s *vmSync) error {
	vmi := s.vmi
	if vmi == nil || (!vmi.IsFinal() && vmi.DeletionTimestamp == nil) {
		return nil
	}
	r.syncStartFailure(s)
	if !hasFinalizer(vmi, virtkit.VirtualMachineControllerFinalizer) {
		return nil
	}
	// Persist the failure count before the VMI can disappear.
	if err := r.updateStatus(ctx, s); err != nil {
		return err
	}
	vmi = vmi.DeepCopy()
	s.vmi = vmi
	removeFinalizers(vmi, virtkit.VirtualMachineControllerFinalizer)
	if err := r.o.Store.Update(ctx, vmi); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			s.vmi = nil
			return nil
		}
		return err
	}
	return nil
}

// releaseAndDelete deletes a VMI after removing the VM controller's
// finalizer from it. It works on a copy of vmi and returns that copy as
// the writes left it.
func (r *VMReconciler) releaseAndDelete(ctx context.Context, vmi *virtkit.VirtualMachineInstance) (*virtkit.VirtualMachineInstance, error) {
	vmi = vmi.DeepCopy()
	if removeFinalizers(vmi, virtkit.VirtualMachineControllerFinalizer) {
		if err := r.o.Store.Update(ctx, vmi); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return vmi, nil
			}
			return vmi, err
		}
	}
	if vmi.DeletionTimestamp != nil {
		return vmi, nil
	}
	return vmi, r.deleteVMI(ctx, vmi)
}

func (r *VMReconciler) deleteVMI(ctx context.Context, vmi *virtkit.VirtualMachineInstance) error {
	uid := vmi.UID
	err := r.o.Store.Delete(ctx, vmi, store.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	r.recordVMIDelete(ctx, vmi, err)
	return err
}

// shouldBackoff: strategies whose automatic starts are delayed after
// failures.
func shouldBackoff(rs virtkit.VirtualMachineRunStrategy) bool {
	return rs == virtkit.RunStrategyAlways || rs == virtkit.RunStrategyRerunOnFailure || rs == virtkit.RunStrategyOnce
}

// syncStartFailure counts a VMI that ended without ever running (and was
// not deleted), once per VMI, and clears the count when a VMI runs or the
// strategy does not back off.
func (r *VMReconciler) syncStartFailure(s *vmSync) {
	rs, err := s.vm.RunStrategy()
	if err != nil || !shouldBackoff(rs) {
		s.vm.Status.StartFailure = nil
		return
	}
	vmi := s.vmi
	if vmi == nil {
		return
	}
	if vmi.IsRunning() {
		s.vm.Status.StartFailure = nil
		return
	}
	// A VMI that was deleted (stopped on purpose) did not fail to start;
	// KubeVirt counts it too, which makes a stop/start of a VM stuck in
	// Starting wait out a crash-loop backoff.
	if !vmi.IsFinal() || vmi.HasReachedPhase(virtkit.Running) || vmi.DeletionTimestamp != nil {
		return
	}
	sf := s.vm.Status.StartFailure
	if sf != nil && sf.LastFailedVMIUID == vmi.UID {
		return
	}
	count := 1
	if sf != nil {
		count = sf.ConsecutiveFailCount + 1
	}
	retry := metav1.NewTime(s.now.Add(backoff.StartFailureDelay(count, r.o.IntN)))
	s.vm.Status.StartFailure = &virtkit.VirtualMachineStartFailure{
		ConsecutiveFailCount: count,
		LastFailedVMIUID:     vmi.UID,
		RetryAfterTimestamp:  &retry,
	}
}

// firstRequest returns status.stateChangeRequests[0] or nil.
func firstRequest(vm *virtkit.VirtualMachine) *virtkit.VirtualMachineStateChangeRequest {
	if len(vm.Status.StateChangeRequests) == 0 {
		return nil
	}
	return &vm.Status.StateChangeRequests[0]
}

func (s *vmSync) stopRequested() bool {
	req := firstRequest(s.vm)
	return s.vmi != nil && req != nil && req.Action == virtkit.StopRequest && req.UID != nil && *req.UID == s.vmi.UID
}

func (s *vmSync) startRequested() bool {
	req := firstRequest(s.vm)
	return req != nil && req.Action == virtkit.StartRequest
}

// syncRunStrategy is KubeVirt's syncRunStrategy.
func (r *VMReconciler) syncRunStrategy(ctx context.Context, s *vmSync) error {
	rs, err := s.vm.RunStrategy()
	if err != nil {
		s.syncErr = reconcile.TerminalError(err)
		s.failReason = ReasonInvalidRunStrategy
		return nil
	}
	s.trimRequests()
	vmi := s.vmi
	deleting := vmi != nil && vmi.DeletionTimestamp != nil
	if deleting {
		return nil // wait until it is gone
	}
	switch rs {
	case virtkit.RunStrategyAlways:
		if vmi != nil && (vmi.IsFinal() || s.stopRequested()) {
			return r.stop(ctx, s)
		}
		if vmi == nil {
			return r.start(ctx, s, true)
		}
	case virtkit.RunStrategyRerunOnFailure:
		if vmi != nil {
			switch {
			case s.stopRequested():
				return r.stop(ctx, s)
			case vmi.Status.Phase == virtkit.Failed:
				// Restart: persist a Start request before deleting, so the
				// restart survives a failed write or a controller restart.
				if !s.startRequested() {
					s.vm.Status.StateChangeRequests = append(s.vm.Status.StateChangeRequests,
						virtkit.VirtualMachineStateChangeRequest{Action: virtkit.StartRequest})
					if err := r.updateStatus(ctx, s); err != nil {
						return err
					}
				}
				return r.stop(ctx, s)
			case vmi.Status.Phase == virtkit.Succeeded:
				return r.stop(ctx, s)
			}
			return nil
		}
		if s.startRequested() || s.vm.Status.RunStrategy != virtkit.RunStrategyRerunOnFailure {
			return r.start(ctx, s, true)
		}
	case virtkit.RunStrategyManual:
		if vmi != nil && s.stopRequested() {
			return r.stop(ctx, s)
		}
		if vmi == nil && s.startRequested() {
			return r.start(ctx, s, false)
		}
	case virtkit.RunStrategyHalted:
		if vmi != nil {
			return r.stop(ctx, s)
		}
		if s.startRequested() {
			// The paused-start path: turn the VM on; Always then creates the
			// VMI from the still-queued Start request.
			return r.setRunning(ctx, s)
		}
	case virtkit.RunStrategyOnce:
		if vmi == nil {
			return r.start(ctx, s, true)
		}
	default:
		s.syncErr = reconcile.TerminalError(fmt.Errorf("spec.runStrategy: %q: %w", rs, virtkit.ErrNotSupported))
		s.failReason = ReasonInvalidRunStrategy
	}
	return nil
}

// setRunning switches a Halted VM to Always (running: true when the VM uses
// the deprecated field).
func (r *VMReconciler) setRunning(ctx context.Context, s *vmSync) error {
	status := s.vm.Status.DeepCopy()
	if s.vm.Spec.Running != nil {
		yes := true
		s.vm.Spec.Running = &yes
	} else {
		always := virtkit.RunStrategyAlways
		s.vm.Spec.RunStrategy = &always
	}
	if err := r.o.Store.Update(ctx, s.vm); err != nil {
		return err
	}
	// Keep the status computed so far (the store returns the stored one).
	s.vm.Status = *status
	s.requeue = time.Nanosecond // act on the new strategy right away
	return nil
}

func (r *VMReconciler) stop(ctx context.Context, s *vmSync) error {
	vmi, err := r.releaseAndDelete(ctx, s.vmi)
	if err != nil {
		s.syncErr = fmt.Errorf("delete vmi %s/%s: %w", s.vmi.Namespace, s.vmi.Name, err)
		s.failReason = ReasonFailedDelete
		return nil
	}
	s.vmi = vmi
	s.deletedVMI = true
	return nil
}

// start creates the VMI, unless a start-failure backoff is in effect.
func (r *VMReconciler) start(ctx context.Context, s *vmSync, backoffApplies bool) error {
	if sf := s.vm.Status.StartFailure; backoffApplies && sf != nil && sf.RetryAfterTimestamp != nil && s.now.Before(sf.RetryAfterTimestamp) {
		s.requeue = sf.RetryAfterTimestamp.Sub(s.now.Time)
		return nil
	}
	if c := virtkit.GetCondition(s.vm.Status.Conditions, virtkit.VirtualMachineManualRecoveryRequired); c != nil && c.Status == virtkit.ConditionTrue {
		// As KubeVirt: the template may name claims the guest never
		// ran on (see syncVolumeMigration).
		s.syncErr = fmt.Errorf("cannot start the VM: it needs manual recovery: %s", c.Message)
		s.failReason = ReasonFailedCreate
		return nil
	}
	expanded, err := r.expandInstancetype(ctx, s)
	if err != nil {
		s.syncErr = err
		s.failReason = ReasonFailedCreate
		return nil
	}
	vmi, err := r.render(expanded)
	if err != nil {
		s.syncErr = reconcile.TerminalError(err)
		s.failReason = ReasonFailedCreate
		return nil
	}
	if err := r.o.createVMI(ctx, s.vm, virtkit.KindVirtualMachine, vmi); err != nil {
		if errors.Is(err, store.ErrAlreadyExists) {
			return err // an old VMI is still there: retry later
		}
		s.syncErr = fmt.Errorf("create vmi %s/%s: %w", vmi.Namespace, vmi.Name, err)
		s.failReason = ReasonFailedCreate
		r.o.event(ctx, s.vm, virtkit.EventTypeWarning, virtkit.EventReasonFailedCreate, "Create", "Error creating virtual machine instance: %v", err)
		return nil
	}
	s.vmi = vmi
	s.createdVMI = true
	r.o.event(ctx, s.vm, virtkit.EventTypeNormal, virtkit.EventReasonSuccessfulCreate, "Create", "Created virtual machine instance %s", vmi.Name)
	r.o.Logger.Debug("created vmi", "vm", s.vm.Namespace+"/"+s.vm.Name, "uid", vmi.UID)
	return nil
}

// render is the VMI the VM would create now: the template rendered
// (newVMIFromVM) and defaulted like a newly created VMI.
func (r *VMReconciler) render(vm *virtkit.VirtualMachine) (*virtkit.VirtualMachineInstance, error) {
	vmi, err := newVMIFromVM(vm)
	if err != nil {
		return nil, err
	}
	r.o.Defaults.SetDefaults(vmi)
	return vmi, nil
}

// newVMIFromVM renders the VM's VMI.
func newVMIFromVM(vm *virtkit.VirtualMachine) (*virtkit.VirtualMachineInstance, error) {
	tmpl := vm.Spec.Template
	if tmpl == nil {
		return nil, fmt.Errorf("vm %s/%s: spec.template: required", vm.Namespace, vm.Name)
	}
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       vm.Namespace,
			Name:            vm.Name,
			Labels:          maps.Clone(tmpl.ObjectMeta.Labels),
			Annotations:     maps.Clone(tmpl.ObjectMeta.Annotations),
			OwnerReferences: []metav1.OwnerReference{newControllerRef(vm, virtkit.KindVirtualMachine)},
			// Both controllers' finalizers at create: the VMI controller
			// then has nothing to add (one write less per VM).
			Finalizers: []string{virtkit.VirtualMachineControllerFinalizer, virtkit.VirtualMachineInstanceFinalizer},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	if vmi.Annotations == nil {
		vmi.Annotations = map[string]string{}
	}
	vmi.Annotations[virtkit.VMGenerationAnnotation] = strconv.FormatInt(vm.Generation, 10)
	if vmi.Spec.Domain.Firmware == nil {
		vmi.Spec.Domain.Firmware = &virtkit.Firmware{}
	}
	if vmi.Spec.Domain.Firmware.UUID == "" {
		vmi.Spec.Domain.Firmware.UUID = virtkit.FirmwareUUIDForVM(vm.Name)
	}
	if req := firstRequest(vm); req != nil && req.Action == virtkit.StartRequest &&
		req.Data[virtkit.StartRequestDataPausedKey] == "true" {
		paused := virtkit.StartStrategyPaused
		vmi.Spec.StartStrategy = &paused
	}
	return vmi, nil
}

// trimRequests pops the first request once it has been acted on.
func (s *vmSync) trimRequests() {
	for {
		req := firstRequest(s.vm)
		if req == nil {
			return
		}
		vmi := s.vmi
		switch req.Action {
		case virtkit.StopRequest:
			if vmi == nil || req.UID == nil || *req.UID != vmi.UID {
				s.vm.Status.StateChangeRequests = s.vm.Status.StateChangeRequests[1:]
				continue
			}
		case virtkit.StartRequest:
			if vmi != nil && !vmi.IsFinal() && vmi.DeletionTimestamp == nil && !s.deletedVMI {
				s.vm.Status.StateChangeRequests = s.vm.Status.StateChangeRequests[1:]
				continue
			}
		default:
			s.vm.Status.StateChangeRequests = s.vm.Status.StateChangeRequests[1:]
			continue
		}
		return
	}
}
