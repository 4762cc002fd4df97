package virtkit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestVMIPredicates(t *testing.T) {
	for _, p := range []VirtualMachineInstancePhase{Succeeded, Failed} {
		assert.True(t, (&VirtualMachineInstance{Status: VirtualMachineInstanceStatus{Phase: p}}).IsFinal(), p)
	}
	for _, p := range []VirtualMachineInstancePhase{VmPhaseUnset, Pending, Scheduling, Scheduled, Running, WaitingForSync, Unknown} {
		assert.False(t, (&VirtualMachineInstance{Status: VirtualMachineInstanceStatus{Phase: p}}).IsFinal(), p)
	}
	vmi := &VirtualMachineInstance{}
	assert.True(t, vmi.IsUnprocessed())
	assert.False(t, vmi.IsMigratable())
	vmi.Status.Conditions = []Condition{{Type: VirtualMachineInstanceIsMigratable, Status: ConditionTrue}}
	assert.True(t, vmi.IsMigratable())
	vmi.Status.EvacuationNodeName = "n1"
	assert.True(t, vmi.IsMarkedForEviction())
	vmi.Spec.StartStrategy = ptrTo(StartStrategyPaused)
	assert.True(t, vmi.ShouldStartPaused())
}

func TestWantsToHaveQOSGuaranteed(t *testing.T) {
	q := resource.MustParse
	tests := []struct {
		name string
		res  ResourceRequirements
		want bool
	}{
		{"nothing set", ResourceRequirements{}, false},
		{"requests only", ResourceRequirements{Requests: ResourceList{ResourceCPU: q("1"), ResourceMemory: q("1Gi")}}, false},
		{"limits only", ResourceRequirements{Limits: ResourceList{ResourceCPU: q("1"), ResourceMemory: q("1Gi")}}, true},
		{"equal", ResourceRequirements{
			Requests: ResourceList{ResourceCPU: q("1000m"), ResourceMemory: q("1Gi")},
			Limits:   ResourceList{ResourceCPU: q("1"), ResourceMemory: q("1024Mi")}}, true},
		{"cpu differs", ResourceRequirements{
			Requests: ResourceList{ResourceCPU: q("500m"), ResourceMemory: q("1Gi")},
			Limits:   ResourceList{ResourceCPU: q("1"), ResourceMemory: q("1Gi")}}, false},
		{"memory limit missing", ResourceRequirements{Limits: ResourceList{ResourceCPU: q("1")}}, false},
		{"zero cpu limit", ResourceRequirements{Limits: ResourceList{ResourceCPU: q("0"), ResourceMemory: q("1Gi")}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi := &VirtualMachineInstance{Spec: VirtualMachineInstanceSpec{Domain: DomainSpec{Resources: tt.res}}}
			assert.Equal(t, tt.want, vmi.WantsToHaveQOSGuaranteed())
		})
	}
}

func TestSetPhaseAndActivePods(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	vmi := &VirtualMachineInstance{}
	assert.True(t, vmi.SetPhase(Pending, now))
	assert.False(t, vmi.SetPhase(Pending, now))
	assert.True(t, vmi.SetPhase(Running, now))
	assert.True(t, vmi.HasReachedPhase(Running))
	assert.False(t, vmi.HasReachedPhase(Failed))
	assert.Len(t, vmi.Status.PhaseTransitionTimestamps, 2)

	assert.True(t, vmi.SetActivePod("a", "node1"))
	assert.False(t, vmi.SetActivePod("a", "node1"))
	assert.True(t, vmi.SetActivePod("b", "node0"))
	assert.Equal(t, []string{"node0", "node1"}, vmi.ActiveNodes())
	assert.True(t, vmi.RemoveActivePod("a"))
	assert.False(t, vmi.RemoveActivePod("a"))
	assert.True(t, vmi.RemoveActivePod("b"))
	assert.Nil(t, vmi.Status.ActivePods)
}

func TestMigrationPredicates(t *testing.T) {
	tests := []struct {
		phase                              VirtualMachineInstanceMigrationPhase
		final, running, created, handedOff bool
	}{
		{MigrationPhaseUnset, false, false, false, false},
		{MigrationPending, false, false, false, false},
		{MigrationScheduling, false, true, true, false},
		{MigrationScheduled, false, true, true, false},
		{MigrationPreparingTarget, false, true, true, true},
		{MigrationTargetReady, false, true, true, true},
		{MigrationRunning, false, true, true, true},
		{MigrationSucceeded, true, false, true, true},
		{MigrationFailed, true, false, true, true},
		{MigrationWaitingForSync, false, false, false, false},
	}
	for _, tt := range tests {
		m := &VirtualMachineInstanceMigration{Status: VirtualMachineInstanceMigrationStatus{Phase: tt.phase}}
		assert.Equal(t, tt.final, m.IsFinal(), "final %q", tt.phase)
		assert.Equal(t, tt.running, m.IsRunning(), "running %q", tt.phase)
		assert.Equal(t, tt.created, m.TargetIsCreated(), "created %q", tt.phase)
		assert.Equal(t, tt.handedOff, m.TargetIsHandedOff(), "handed off %q", tt.phase)
	}
	var s MigrationEngineStatus
	for i := range 5 {
		s.RecordDecision(MigrationEngineDecision{Action: string(rune('a' + i))}, 3)
	}
	assert.Equal(t, []string{"c", "d", "e"}, []string{s.Decisions[0].Action, s.Decisions[1].Action, s.Decisions[2].Action})
}
