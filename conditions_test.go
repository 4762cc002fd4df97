package virtkit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetCondition(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	ready := func(status ConditionStatus, reason string) Condition {
		return Condition{Type: VirtualMachineInstanceReady, Status: status, Reason: reason}
	}
	tests := []struct {
		name        string
		existing    []Condition
		set         Condition
		wantChanged bool
		want        []Condition
	}{
		{
			name:        "add sets transition time to now",
			set:         ready(ConditionFalse, PodNotExistsReason),
			wantChanged: true,
			want:        []Condition{{Type: VirtualMachineInstanceReady, Status: ConditionFalse, Reason: PodNotExistsReason, LastTransitionTime: t1}},
		},
		{
			name:     "identical is no change and keeps the old transition time",
			existing: []Condition{{Type: VirtualMachineInstanceReady, Status: ConditionFalse, Reason: PodNotExistsReason, LastTransitionTime: t0}},
			set:      ready(ConditionFalse, PodNotExistsReason),
			want:     []Condition{{Type: VirtualMachineInstanceReady, Status: ConditionFalse, Reason: PodNotExistsReason, LastTransitionTime: t0}},
		},
		{
			name:        "reason change keeps the transition time",
			existing:    []Condition{{Type: VirtualMachineInstanceReady, Status: ConditionFalse, Reason: PodNotExistsReason, LastTransitionTime: t0}},
			set:         ready(ConditionFalse, GuestNotRunningReason),
			wantChanged: true,
			want:        []Condition{{Type: VirtualMachineInstanceReady, Status: ConditionFalse, Reason: GuestNotRunningReason, LastTransitionTime: t0}},
		},
		{
			name:        "status change moves the transition time",
			existing:    []Condition{{Type: VirtualMachineInstanceReady, Status: ConditionFalse, Reason: PodNotExistsReason, LastTransitionTime: t0}},
			set:         ready(ConditionTrue, ""),
			wantChanged: true,
			want:        []Condition{{Type: VirtualMachineInstanceReady, Status: ConditionTrue, LastTransitionTime: t1}},
		},
		{
			name: "other conditions are untouched",
			existing: []Condition{
				{Type: VirtualMachineInstanceIsMigratable, Status: ConditionTrue, LastTransitionTime: t0},
			},
			set:         ready(ConditionTrue, ""),
			wantChanged: true,
			want: []Condition{
				{Type: VirtualMachineInstanceIsMigratable, Status: ConditionTrue, LastTransitionTime: t0},
				{Type: VirtualMachineInstanceReady, Status: ConditionTrue, LastTransitionTime: t1},
			},
		},
		{
			name:        "probe time is copied when given",
			existing:    []Condition{{Type: VirtualMachineInstanceReady, Status: ConditionTrue, LastTransitionTime: t0}},
			set:         Condition{Type: VirtualMachineInstanceReady, Status: ConditionTrue, LastProbeTime: t1},
			wantChanged: true,
			want:        []Condition{{Type: VirtualMachineInstanceReady, Status: ConditionTrue, LastTransitionTime: t0, LastProbeTime: t1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := append([]Condition(nil), tt.existing...)
			changed := SetCondition(&conds, tt.set, t1)
			assert.Equal(t, tt.wantChanged, changed)
			require.Len(t, conds, len(tt.want))
			for i := range tt.want {
				assert.Equal(t, tt.want[i].Type, conds[i].Type)
				assert.Equal(t, tt.want[i].Status, conds[i].Status)
				assert.Equal(t, tt.want[i].Reason, conds[i].Reason)
				assert.True(t, tt.want[i].LastTransitionTime.Equal(&conds[i].LastTransitionTime), "transition time %v", conds[i].LastTransitionTime)
				assert.True(t, tt.want[i].LastProbeTime.Equal(&conds[i].LastProbeTime), "probe time %v", conds[i].LastProbeTime)
			}
		})
	}
}

func TestRemoveAndGetCondition(t *testing.T) {
	conds := []Condition{
		{Type: VirtualMachineInstanceAgentConnected, Status: ConditionTrue},
		{Type: VirtualMachineInstancePaused, Status: ConditionTrue, Reason: PausedByUserReason},
	}
	assert.True(t, IsConditionTrue(conds, VirtualMachineInstanceAgentConnected))
	assert.True(t, HasCondition(conds, VirtualMachineInstancePaused, ConditionTrue, PausedByUserReason))
	assert.False(t, HasCondition(conds, VirtualMachineInstancePaused, ConditionTrue, PausedIOErrorReason))
	assert.Nil(t, GetCondition(conds, VirtualMachineInstanceReady))

	assert.True(t, RemoveCondition(&conds, VirtualMachineInstanceAgentConnected))
	assert.False(t, RemoveCondition(&conds, VirtualMachineInstanceAgentConnected))
	require.Len(t, conds, 1)
	assert.Equal(t, VirtualMachineInstancePaused, conds[0].Type)
	assert.True(t, RemoveCondition(&conds, VirtualMachineInstancePaused))
	assert.Nil(t, conds)
	assert.False(t, SetCondition(nil, Condition{Type: "X"}, metav1.Now()))
}
