package virtkit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestPrintableStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Minute))
	later := metav1.NewTime(now.Add(time.Minute))
	vm := func(rs VirtualMachineRunStrategy) *VirtualMachine {
		return &VirtualMachine{Spec: VirtualMachineSpec{RunStrategy: &rs}}
	}
	vmi := func(phase VirtualMachineInstancePhase, conds ...Condition) *VirtualMachineInstance {
		return &VirtualMachineInstance{Status: VirtualMachineInstanceStatus{Phase: phase, Conditions: conds}}
	}
	deleting := func(v *VirtualMachineInstance) *VirtualMachineInstance {
		v.DeletionTimestamp = &earlier
		return v
	}
	migrating := func(start *metav1.Time, end *metav1.Time) *VirtualMachineInstance {
		v := vmi(Running)
		v.Status.MigrationState = &VirtualMachineInstanceMigrationState{StartTimestamp: start, EndTimestamp: end}
		return v
	}
	crashLooping := func(rs VirtualMachineRunStrategy) *VirtualMachine {
		v := vm(rs)
		v.Status.StartFailure = &VirtualMachineStartFailure{ConsecutiveFailCount: 2}
		return v
	}
	syncFalse := func(reason string) Condition {
		return Condition{Type: VirtualMachineInstanceSynchronized, Status: ConditionFalse, Reason: reason}
	}
	paused := Condition{Type: VirtualMachineInstancePaused, Status: ConditionTrue, Reason: PausedByUserReason}
	unschedulable := Condition{Type: VirtualMachineInstancePodScheduled, Status: ConditionFalse, Reason: PodReasonUnschedulable}
	terminatingVM := vm(RunStrategyAlways)
	terminatingVM.DeletionTimestamp = &earlier
	stopUID := types.UID("vmi-uid")
	manualStopping := vm(RunStrategyManual)
	manualStopping.Status.StateChangeRequests = []VirtualMachineStateChangeRequest{{Action: StopRequest, UID: &stopUID}}
	manualVMI := vmi(Scheduled)
	manualVMI.UID = stopUID

	tests := []struct {
		name string
		in   PrintableStatusInput
		want VirtualMachinePrintableStatus
	}{
		{"1 terminating beats running", PrintableStatusInput{VM: terminatingVM, VMI: vmi(Running)}, VirtualMachineStatusTerminating},
		{"2 stopping: VMI deleting", PrintableStatusInput{VM: vm(RunStrategyHalted), VMI: deleting(vmi(Running))}, VirtualMachineStatusStopping},
		{"2 stopping: deletion expected", PrintableStatusInput{VM: vm(RunStrategyHalted), VMI: vmi(Running), VMIDeletionExpected: true}, VirtualMachineStatusStopping},
		{"2 final deleting VMI is not stopping", PrintableStatusInput{VM: vm(RunStrategyHalted), VMI: deleting(vmi(Succeeded))}, VirtualMachineStatusStopped},
		{"3 migrating", PrintableStatusInput{VM: vm(RunStrategyAlways), VMI: migrating(&earlier, nil)}, VirtualMachineStatusMigrating},
		{"3 migration starting in the future is not migrating", PrintableStatusInput{VM: vm(RunStrategyAlways), VMI: migrating(&later, nil)}, VirtualMachineStatusRunning},
		{"3 ended migration is not migrating", PrintableStatusInput{VM: vm(RunStrategyAlways), VMI: migrating(&earlier, &earlier)}, VirtualMachineStatusRunning},
		{"4 paused", PrintableStatusInput{VM: vm(RunStrategyAlways), VMI: vmi(Running, paused)}, VirtualMachineStatusPaused},
		{"5 running", PrintableStatusInput{VM: vm(RunStrategyAlways), VMI: vmi(Running)}, VirtualMachineStatusRunning},
		{"6 pvc not found beats starting", PrintableStatusInput{VM: vm(RunStrategyAlways), VMI: vmi(Pending, syncFalse(FailedPvcNotFoundReason))}, VirtualMachineStatusPvcNotFound},
		{"7 datavolume error", PrintableStatusInput{VM: vm(RunStrategyAlways), DataVolumeError: true, DataVolumeProvisioning: true}, VirtualMachineStatusDataVolumeError},
		{"8 unschedulable", PrintableStatusInput{VM: vm(RunStrategyAlways), VMI: vmi(Scheduling, unschedulable)}, VirtualMachineStatusUnschedulable},
		{"9 provisioning", PrintableStatusInput{VM: vm(RunStrategyAlways), DataVolumeProvisioning: true}, VirtualMachineStatusProvisioning},
		{"10 waiting for volume binding", PrintableStatusInput{VM: vm(RunStrategyAlways), VolumeBindingPending: true}, VirtualMachineStatusWaitingForVolumeBinding},
		{"10 halted VM does not wait for binding", PrintableStatusInput{VM: vm(RunStrategyHalted), VolumeBindingPending: true}, VirtualMachineStatusStopped},
		{"10 manual VM with stop request does not wait for binding", PrintableStatusInput{VM: manualStopping, VMI: manualVMI, VolumeBindingPending: true}, VirtualMachineStatusStarting},
		{"11 image pull", PrintableStatusInput{VM: vm(RunStrategyAlways), VMI: vmi(Scheduling, syncFalse(ErrImagePullReason))}, VirtualMachineStatusErrImagePull},
		{"12 image pull backoff", PrintableStatusInput{VM: vm(RunStrategyAlways), VMI: vmi(Scheduling, syncFalse(ImagePullBackOffReason))}, VirtualMachineStatusImagePullBackOff},
		{"13 starting: creation expected", PrintableStatusInput{VM: vm(RunStrategyAlways), VMICreationExpected: true}, VirtualMachineStatusStarting},
		{"13 starting: unset phase", PrintableStatusInput{VM: vm(RunStrategyAlways), VMI: vmi(VmPhaseUnset)}, VirtualMachineStatusStarting},
		{"13 starting: scheduled", PrintableStatusInput{VM: vm(RunStrategyAlways), VMI: vmi(Scheduled)}, VirtualMachineStatusStarting},
		{"14 crash loop: always, no VMI", PrintableStatusInput{VM: crashLooping(RunStrategyAlways)}, VirtualMachineStatusCrashLoopBackOff},
		{"14 crash loop: rerun, failed VMI", PrintableStatusInput{VM: crashLooping(RunStrategyRerunOnFailure), VMI: vmi(Failed)}, VirtualMachineStatusCrashLoopBackOff},
		{"14 manual never crash loops", PrintableStatusInput{VM: crashLooping(RunStrategyManual), VMI: vmi(Failed)}, VirtualMachineStatusStopped},
		{"15 stopped: no VMI", PrintableStatusInput{VM: vm(RunStrategyHalted)}, VirtualMachineStatusStopped},
		{"15 stopped: final VMI", PrintableStatusInput{VM: vm(RunStrategyAlways), VMI: vmi(Succeeded)}, VirtualMachineStatusStopped},
		{"16 waiting for receiver", PrintableStatusInput{VM: vm(RunStrategyWaitAsReceiver), VMI: vmi(WaitingForSync)}, VirtualMachineStatusWaitingForReceiver},
		{"unknown phase matches nothing", PrintableStatusInput{VM: vm(RunStrategyAlways), VMI: vmi(Unknown)}, VirtualMachineStatusUnknown},
		{"running and runStrategy both set: no crash loop", PrintableStatusInput{VM: &VirtualMachine{Spec: VirtualMachineSpec{Running: ptrTo(true), RunStrategy: ptrTo(RunStrategyAlways)}, Status: VirtualMachineStatus{StartFailure: &VirtualMachineStartFailure{ConsecutiveFailCount: 1}}}}, VirtualMachineStatusStopped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now = now
			assert.Equal(t, tt.want, PrintableStatus(tt.in))
		})
	}
}

func TestIsSetToStart(t *testing.T) {
	uid := types.UID("u1")
	vmiWith := func(phase VirtualMachineInstancePhase) *VirtualMachineInstance {
		v := &VirtualMachineInstance{Status: VirtualMachineInstanceStatus{Phase: phase}}
		v.UID = uid
		return v
	}
	vm := func(rs VirtualMachineRunStrategy, reqs ...VirtualMachineStateChangeRequest) *VirtualMachine {
		return &VirtualMachine{Spec: VirtualMachineSpec{RunStrategy: &rs}, Status: VirtualMachineStatus{StateChangeRequests: reqs}}
	}
	tests := []struct {
		name string
		vm   *VirtualMachine
		vmi  *VirtualMachineInstance
		want bool
	}{
		{"always", vm(RunStrategyAlways), nil, true},
		{"halted", vm(RunStrategyHalted), vmiWith(Running), false},
		{"manual without VMI or request", vm(RunStrategyManual), nil, false},
		{"manual with start request", vm(RunStrategyManual, VirtualMachineStateChangeRequest{Action: StartRequest}), nil, true},
		{"manual with VMI", vm(RunStrategyManual), vmiWith(Running), true},
		{"manual with stop request for the VMI", vm(RunStrategyManual, VirtualMachineStateChangeRequest{Action: StopRequest, UID: &uid}), vmiWith(Running), false},
		{"rerun: succeeded VMI", vm(RunStrategyRerunOnFailure), vmiWith(Succeeded), false},
		{"rerun: failed VMI", vm(RunStrategyRerunOnFailure), vmiWith(Failed), true},
		{"rerun: no VMI", vm(RunStrategyRerunOnFailure), nil, true},
		{"once: no VMI", vm(RunStrategyOnce), nil, true},
		{"once: VMI exists", vm(RunStrategyOnce), vmiWith(Succeeded), false},
		{"both fields set", &VirtualMachine{Spec: VirtualMachineSpec{Running: ptrTo(true), RunStrategy: ptrTo(RunStrategyAlways)}}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, IsSetToStart(tt.vm, tt.vmi))
		})
	}
}
