package actions

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// Errors of the action calls. They mirror the HTTP statuses KubeVirt's
// subresources answer with.
var (
	// ErrConflictingAction (409): the action is not allowed in the VM's or
	// VMI's current state or run strategy, or another start/stop is queued.
	ErrConflictingAction = errors.New("conflicting action")
	// ErrActionForbidden (403): the action is never allowed for this VMI.
	ErrActionForbidden = errors.New("action forbidden")
	// ErrInvalidAction (400): the options of the call are malformed.
	ErrInvalidAction = errors.New("invalid action request")
)

func conflict(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConflictingAction, fmt.Sprintf(format, args...))
}

// StartOptions are the options of [Start].
type StartOptions struct {
	// Paused starts the VMI with its domain paused.
	Paused bool
}

// StopOptions are the options of [Stop].
type StopOptions struct {
	// GracePeriod, when set, replaces the running VMI's
	// terminationGracePeriodSeconds first (a Halted VM accepts a stop only
	// with a shorter grace period: a forced stop of a stopping VM).
	GracePeriod *int64
}

// RestartOptions are the options of [Restart].
type RestartOptions struct {
	// GracePeriodSeconds may only be 0: a forced restart (the running VMI's
	// grace period becomes 1 s).
	GracePeriodSeconds *int64
}

// MigrateOptions are the options of [Migrate].
type MigrateOptions struct {
	// AddedNodeSelector further restricts the target node.
	AddedNodeSelector map[string]string
}

// SoftRebootOptions are the options of [SoftReboot].
type SoftRebootOptions struct {
	// Token identifies the request; empty means the current time.
	Token string
}

// Start asks the VM's controller to start it (KubeVirt's start
// subresource): Halted VMs switch to Always (or get a paused Start
// request), Manual and RerunOnFailure VMs get a Start request (a
// Stop+Start if their VMI already ended), Always and Once VMs refuse with
// ErrConflictingAction. A missing VM gives an error wrapping
// store.ErrNotFound.
func Start(ctx context.Context, st store.Store, key store.Key, opts StartOptions) error {
	return retryOnConflict(ctx, func() error {
		vm, vmi, err := getVMAndVMI(ctx, st, key)
		if err != nil {
			return err
		}
		if vmi != nil && !vmi.IsFinal() && vmi.Status.Phase != virtkit.Unknown && vmi.Status.Phase != virtkit.VmPhaseUnset {
			return conflict("VM is already running")
		}
		if virtkit.IsConditionTrue(vm.Status.Conditions, virtkit.VirtualMachineManualRecoveryRequired) {
			return conflict("VM requires manual recovery before it can start")
		}
		rs, err := vm.RunStrategy()
		if err != nil {
			return err
		}
		start := virtkit.VirtualMachineStateChangeRequest{Action: virtkit.StartRequest}
		if opts.Paused {
			start.Data = map[string]string{virtkit.StartRequestDataPausedKey: "true"}
		}
		switch rs {
		case virtkit.RunStrategyHalted:
			if opts.Paused {
				return addChangeRequests(ctx, st, vm, start)
			}
			return setRunStrategy(ctx, st, vm, true)
		case virtkit.RunStrategyRerunOnFailure, virtkit.RunStrategyManual:
			restart := (rs == virtkit.RunStrategyRerunOnFailure && vmi != nil && vmi.Status.Phase == virtkit.Succeeded) ||
				(rs == virtkit.RunStrategyManual && vmi != nil && vmi.IsFinal())
			if rs == virtkit.RunStrategyRerunOnFailure && vmi != nil && vmi.Status.Phase == virtkit.Failed {
				return conflict("%s does not support starting VM from failed state", rs)
			}
			if restart {
				uid := vmi.UID
				return addChangeRequests(ctx, st, vm,
					virtkit.VirtualMachineStateChangeRequest{Action: virtkit.StopRequest, UID: &uid}, start)
			}
			return addChangeRequests(ctx, st, vm, start)
		default:
			return conflict("%s does not support manual start requests", rs)
		}
	})
}

// Stop asks the VM's controller to stop it (KubeVirt's stop subresource):
// Always and Once VMs switch to Halted, Manual and RerunOnFailure VMs get
// a Stop request for the running VMI, Halted VMs accept only a forced stop
// (a shorter grace period).
func Stop(ctx context.Context, st store.Store, key store.Key, opts StopOptions) error {
	if opts.GracePeriod != nil && *opts.GracePeriod < 0 {
		return fmt.Errorf("%w: gracePeriod: must not be negative", ErrInvalidAction)
	}
	applied := false // the grace period was written by an earlier attempt
	return retryOnConflict(ctx, func() error {
		vm, vmi, err := getVMAndVMI(ctx, st, key)
		if err != nil {
			return err
		}
		rs, err := vm.RunStrategy()
		if err != nil {
			return err
		}
		running := vmi != nil && !vmi.IsFinal()
		stopReq := func() virtkit.VirtualMachineStateChangeRequest {
			uid := vmi.UID
			return virtkit.VirtualMachineStateChangeRequest{Action: virtkit.StopRequest, UID: &uid}
		}
		switch rs {
		case virtkit.RunStrategyHalted:
			if !running {
				if applied {
					// An earlier attempt shortened the grace period and the
					// node acted on it before this attempt's retry.
					return nil
				}
				return conflict("VM is not running")
			}
			old := vmi.Spec.TerminationGracePeriodSeconds
			if opts.GracePeriod == nil || (!applied && old != nil && *opts.GracePeriod >= *old) {
				return conflict("%s only supports manual stop requests with a shorter graceperiod", rs)
			}
			if err := setGracePeriod(ctx, st, vmi, *opts.GracePeriod); err != nil {
				return err
			}
			applied = true
			return addChangeRequests(ctx, st, vm, stopReq())
		case virtkit.RunStrategyRerunOnFailure, virtkit.RunStrategyManual:
			if !running {
				if applied {
					return nil
				}
				return conflict("VM is not running")
			}
			if opts.GracePeriod != nil {
				if err := setGracePeriod(ctx, st, vmi, *opts.GracePeriod); err != nil {
					return err
				}
				applied = true
			}
			return addChangeRequests(ctx, st, vm, stopReq())
		default:
			if running && opts.GracePeriod != nil {
				if err := setGracePeriod(ctx, st, vmi, *opts.GracePeriod); err != nil {
					return err
				}
			}
			return setRunStrategy(ctx, st, vm, false)
		}
	})
}

// Restart asks for a Stop of the running VMI followed by a Start (not for
// Halted and Once VMs). While a restart is already queued a second one is
// refused (ErrConflictingAction, "stop/start already underway"), except a
// forced one: it succeeds and cuts the queued restart's graceful stop short
// (the VMI being stopped gets 1 s).
func Restart(ctx context.Context, st store.Store, key store.Key, opts RestartOptions) error {
	if g := opts.GracePeriodSeconds; g != nil {
		if *g > 0 {
			return fmt.Errorf("%w: gracePeriodSeconds: for force restart, only gracePeriod=0 is supported for now", ErrInvalidAction)
		}
		if *g < 0 {
			return fmt.Errorf("%w: gracePeriodSeconds: has to be greater or equal to 0", ErrInvalidAction)
		}
	}
	return retryOnConflict(ctx, func() error {
		vm, vmi, err := getVMAndVMI(ctx, st, key)
		if err != nil {
			return err
		}
		rs, err := vm.RunStrategy()
		if err != nil {
			return err
		}
		if rs == virtkit.RunStrategyHalted || rs == virtkit.RunStrategyOnce {
			return conflict("RunStrategy %s does not support manual restart requests", rs)
		}
		force := opts.GracePeriodSeconds != nil
		if force && restartQueued(vm) {
			// The queued restart does what was asked; force only shortens
			// the graceful stop of the VMI it stops (a retry of this call
			// after a conflict on the grace period write lands here too).
			if vmi != nil && !vmi.IsFinal() && stopQueuedFor(vm, vmi) {
				return setGracePeriod(ctx, st, vmi, 1)
			}
			return nil
		}
		if vmi == nil {
			return conflict("VM is not running")
		}
		uid := vmi.UID
		if err := addChangeRequests(ctx, st, vm,
			virtkit.VirtualMachineStateChangeRequest{Action: virtkit.StopRequest, UID: &uid},
			virtkit.VirtualMachineStateChangeRequest{Action: virtkit.StartRequest}); err != nil {
			return err
		}
		if force && !vmi.IsFinal() {
			return setGracePeriod(ctx, st, vmi, 1)
		}
		return nil
	})
}

// restartQueued reports whether the VM's queued state change requests end
// in a Start the VM controller has not acted on yet: a restart (or start)
// is underway.
func restartQueued(vm *virtkit.VirtualMachine) bool {
	for _, r := range vm.Status.StateChangeRequests {
		if r.Action == virtkit.StartRequest {
			return true
		}
	}
	return false
}

// stopQueuedFor reports whether a Stop of vmi is queued.
func stopQueuedFor(vm *virtkit.VirtualMachine, vmi *virtkit.VirtualMachineInstance) bool {
	for _, r := range vm.Status.StateChangeRequests {
		if r.Action == virtkit.StopRequest && r.UID != nil && *r.UID == vmi.UID {
			return true
		}
	}
	return false
}

// Pause asks the node agent to pause the running VMI's domain
// (annotation [virtkit.PauseRequestAnnotation] = "true").
func Pause(ctx context.Context, st store.Store, key store.Key) error {
	return retryOnConflict(ctx, func() error {
		vmi, err := getVMI(ctx, st, key)
		if err != nil {
			return err
		}
		if !vmi.IsRunning() {
			return conflict("VM is not running")
		}
		if vmi.Spec.LivenessProbe != nil {
			return fmt.Errorf("%w: Pausing VMIs with LivenessProbe is currently not supported", ErrActionForbidden)
		}
		if vmi.IsPaused() {
			return conflict("VMI is already paused")
		}
		return annotate(ctx, st, vmi, virtkit.PauseRequestAnnotation, "true")
	})
}

// Unpause asks the node agent to resume the paused VMI's domain
// (annotation [virtkit.PauseRequestAnnotation] = "false").
func Unpause(ctx context.Context, st store.Store, key store.Key) error {
	return retryOnConflict(ctx, func() error {
		vmi, err := getVMI(ctx, st, key)
		if err != nil {
			return err
		}
		if !vmi.IsRunning() {
			return conflict("VMI is not running")
		}
		if !vmi.IsPaused() {
			return conflict("VMI is not paused")
		}
		if virtkit.HasCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstancePaused, virtkit.ConditionTrue, virtkit.PausedByMigrationMonitorReason) {
			// Not a user's pause: the source node agent resumes the guest
			// when the migration ends without moving it.
			return conflict("VMI is paused by the migration monitor, not by a user: it resumes when its migration ends")
		}
		return annotate(ctx, st, vmi, virtkit.PauseRequestAnnotation, "false")
	})
}

// SoftReboot asks the node agent to reboot the guest (guest agent, else
// ACPI) via annotation [virtkit.SoftRebootRequestAnnotation].
func SoftReboot(ctx context.Context, st store.Store, key store.Key, opts SoftRebootOptions) error {
	token := opts.Token
	if token == "" {
		token = time.Now().UTC().Format(time.RFC3339Nano)
	}
	return retryOnConflict(ctx, func() error {
		vmi, err := getVMI(ctx, st, key)
		if err != nil {
			return err
		}
		if !vmi.IsRunning() {
			return conflict("VM is not running")
		}
		if vmi.IsPaused() {
			return conflict("VMI is paused")
		}
		if virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected) == nil {
			if f := vmi.Spec.Domain.Features; f != nil && f.ACPI.Enabled != nil && !*f.ACPI.Enabled {
				return conflict("VMI neither have the agent connected nor the ACPI feature enabled")
			}
		}
		return annotate(ctx, st, vmi, virtkit.SoftRebootRequestAnnotation, token)
	})
}

// Migrate creates a VirtualMachineInstanceMigration for the VMI at key,
// after KubeVirt's admission checks: the VMI exists and is not
// final, is not LiveMigratable=False, and has no migration in flight.
func Migrate(ctx context.Context, st store.Store, key store.Key, opts MigrateOptions) (*virtkit.VirtualMachineInstanceMigration, error) {
	vmi, err := getVMI(ctx, st, key)
	if err != nil {
		return nil, fmt.Errorf("the VMI %q does not exist: %w", key.String(), err)
	}
	mig := &virtkit.VirtualMachineInstanceMigration{
		TypeMeta: metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstanceMigration},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    key.Namespace,
			GenerateName: "kubevirt-migrate-vm-",
			Labels:       map[string]string{virtkit.MigrationSelectorLabel: key.Name},
		},
		Spec: virtkit.VirtualMachineInstanceMigrationSpec{VMIName: key.Name, AddedNodeSelector: opts.AddedNodeSelector},
	}
	if err := admitMigration(ctx, st, vmi); err != nil {
		return nil, err
	}
	if err := st.Create(ctx, mig); err != nil {
		return nil, err
	}
	return mig, nil
}

// admitMigration applies KubeVirt's migration create admission to a VMI.
func admitMigration(ctx context.Context, st store.Store, vmi *virtkit.VirtualMachineInstance) error {
	if vmi.IsFinal() {
		return conflict("Cannot migrate VMI in finalized state.")
	}
	if c := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable); c != nil && c.Status == virtkit.ConditionFalse {
		return conflict("Cannot migrate VMI, Reason: %s, Message: %s", c.Reason, c.Message)
	}
	migs := &virtkit.VirtualMachineInstanceMigrationList{}
	if err := st.List(ctx, migs, store.ListOptions{
		Namespace:     vmi.Namespace,
		LabelSelector: labels.SelectorFromSet(labels.Set{virtkit.MigrationSelectorLabel: vmi.Name}),
	}); err != nil {
		return err
	}
	for i := range migs.Items {
		// A cancelled migration still finalizing does not refuse the next
		// one, which waits for it in Pending.
		if !migs.Items[i].IsFinal() && migs.Items[i].DeletionTimestamp == nil {
			return conflict("in-flight migration detected. Active migration job (%s) is currently already in progress for VMI %s.", migs.Items[i].Name, vmi.Name)
		}
	}
	return nil
}

func getVMAndVMI(ctx context.Context, st store.Store, key store.Key) (*virtkit.VirtualMachine, *virtkit.VirtualMachineInstance, error) {
	vm := &virtkit.VirtualMachine{}
	if err := st.Get(ctx, key, vm); err != nil {
		return nil, nil, fmt.Errorf("virtualmachine %s: %w", key, err)
	}
	vmi := &virtkit.VirtualMachineInstance{}
	found, err := getOptional(ctx, st, key, vmi)
	if err != nil {
		return nil, nil, err
	}
	if !found {
		return vm, nil, nil
	}
	return vm, vmi, nil
}

func getVMI(ctx context.Context, st store.Store, key store.Key) (*virtkit.VirtualMachineInstance, error) {
	vmi := &virtkit.VirtualMachineInstance{}
	if err := st.Get(ctx, key, vmi); err != nil {
		return nil, fmt.Errorf("virtualmachineinstance %s: %w", key, err)
	}
	return vmi, nil
}

// addChangeRequests queues state change requests with KubeVirt's rules: a
// lone Stop replaces whatever is queued; anything else needs an empty
// queue. It also clears status.startFailure. A concurrent writer makes
// the write fail with store.ErrConflict, and the caller re-evaluates.
func addChangeRequests(ctx context.Context, st store.Store, vm *virtkit.VirtualMachine, reqs ...virtkit.VirtualMachineStateChangeRequest) error {
	if len(reqs) == 1 && reqs[0].Action == virtkit.StopRequest {
		vm.Status.StateChangeRequests = reqs
	} else {
		if len(vm.Status.StateChangeRequests) != 0 {
			return conflict("unable to complete request: stop/start already underway")
		}
		vm.Status.StateChangeRequests = reqs
	}
	vm.Status.StartFailure = nil
	return st.UpdateStatus(ctx, vm)
}

// setRunStrategy turns the VM on (Always / running: true) or off (Halted /
// running: false), using the field the VM already uses.
func setRunStrategy(ctx context.Context, st store.Store, vm *virtkit.VirtualMachine, on bool) error {
	if vm.Spec.Running != nil && vm.Spec.RunStrategy == nil {
		vm.Spec.Running = &on
	} else {
		rs := virtkit.RunStrategyHalted
		if on {
			rs = virtkit.RunStrategyAlways
		}
		vm.Spec.RunStrategy = &rs
		vm.Spec.Running = nil
	}
	if err := st.Update(ctx, vm); err != nil {
		return err
	}
	if vm.Status.StartFailure == nil {
		return nil
	}
	vm.Status.StartFailure = nil
	return st.UpdateStatus(ctx, vm)
}

func setGracePeriod(ctx context.Context, st store.Store, vmi *virtkit.VirtualMachineInstance, seconds int64) error {
	if g := vmi.Spec.TerminationGracePeriodSeconds; g != nil && *g == seconds {
		return nil
	}
	vmi.Spec.TerminationGracePeriodSeconds = &seconds
	return st.Update(ctx, vmi)
}

func annotate(ctx context.Context, st store.Store, vmi *virtkit.VirtualMachineInstance, key, value string) error {
	if vmi.Annotations == nil {
		vmi.Annotations = map[string]string{}
	}
	vmi.Annotations[key] = value
	return st.Update(ctx, vmi)
}
