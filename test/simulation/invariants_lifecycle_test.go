package simulation

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// runOps runs ops through the operation table with the checker following
// them, as Run does, and returns the checker and the violations.
func runOps(ctx context.Context, t *testing.T, h *Harness, ops []Op) (*checker, []Violation) {
	t.Helper()
	table := operationsByName()
	chk := newChecker(h)
	u := asUser(ctx)
	var out []Violation
	for i, op := range ops {
		spec, ok := table[op.Name]
		require.True(t, ok, op.Name)
		require.True(t, expected(spec.run(u, h, op)), "step %d %s", i, op)
		chk.afterOp(i, op, spec.fault)
		require.NoError(t, h.Advance(ctx, op.Advance.Duration()))
		vs, err := chk.step(u, i)
		require.NoError(t, err)
		out = append(out, vs...)
	}
	return chk, out
}

// A stop of a guest that ignores ACPI destroys it at the end of its grace
// period and fails its VMI; one that answers within the grace period
// shuts down cleanly with a ShuttingDown event first. Claiming the other
// behaviour for the same stop is reported: the check can fail.
func TestACPIStopInvariant(t *testing.T) {
	for _, tc := range []struct {
		name  string
		acpi  Op
		grace int // apply-vm's n: Always with gracePeriods[n/4]
		phase virtkit.VirtualMachineInstancePhase
		claim time.Duration // a stopRecord.answer that contradicts the run (0: none)
	}{
		{"ignores ACPI, grace 5s", Op{Name: "acpi-ignore", Target: "vm-0"}, 4, virtkit.Failed, 0},
		{"ignores ACPI, grace 30s", Op{Name: "acpi-ignore", Target: "vm-0"}, 8, virtkit.Failed, time.Second},
		{"ignores ACPI, grace 180s", Op{Name: "acpi-ignore", Target: "vm-0"}, 12, virtkit.Failed, time.Second},
		{"answers after 1s, grace 30s", Op{Name: "acpi-delay", Target: "vm-0", N: 1}, 8, virtkit.Succeeded, -1},
		{"answers after 60s, grace 30s", Op{Name: "acpi-delay", Target: "vm-0", N: 60}, 8, virtkit.Failed, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			h, err := NewHarness(ctx, HarnessOptions{Seed: 7})
			require.NoError(t, err)
			defer func() { require.NoError(t, h.Close()) }()
			tc.acpi.Advance = 1000
			chk, vs := runOps(ctx, t, h, []Op{
				{Name: "apply-vm", Target: "vm-0", N: tc.grace, Advance: 20000},
				tc.acpi,
				{Name: "stop", Target: "vm-0", Advance: 5 * 60000},
			})
			require.Empty(t, vs)
			final, err := chk.final(asUser(ctx), 3)
			require.NoError(t, err)
			assert.Empty(t, final)
			require.Len(t, h.life.stops, 1)
			s := h.life.stops[0]
			require.True(t, s.clean)
			end, ok := chk.life.final[s.vmi]
			require.True(t, ok, "the stopped VMI ended")
			assert.Equal(t, tc.phase, end.phase)
			assert.False(t, end.at.After(s.at.Add(s.grace+stopPollSlack)), "ended at %s, stopped at %s", end.at, s.at)
			if tc.phase == virtkit.Succeeded {
				assert.True(t, shutdownBefore(chk.life.shutdowns[s.vmi], end.at), "a ShuttingDown event before the end")
			}

			if tc.claim == 0 {
				return
			}
			s.answer = tc.claim
			chk.reported = map[string]bool{}
			final, err = chk.final(asUser(ctx), 4)
			require.NoError(t, err)
			assert.Contains(t, invariantsOf(final), InvACPI)
		})
	}
}

// Deleting a VM with policy Orphan leaves its VMI running without an
// owner reference; Background and Foreground take the VMI with it.
func TestDeletePropagationInvariant(t *testing.T) {
	for i, policy := range deletePolicies {
		t.Run(string(policy), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			h, err := NewHarness(ctx, HarnessOptions{Seed: 9})
			require.NoError(t, err)
			defer func() { require.NoError(t, h.Close()) }()
			chk, vs := runOps(ctx, t, h, []Op{
				{Name: "apply-vm", Target: "vm-0", N: 8, Advance: 20000},
				{Name: "delete-vm", Target: "vm-0", N: i, Advance: 2 * 60000},
			})
			require.Empty(t, vs)
			final, err := chk.final(asUser(ctx), 2)
			require.NoError(t, err)
			assert.Empty(t, final)
			vmi := &virtkit.VirtualMachineInstance{}
			err = h.Store.Get(ctx, store.Key{Namespace: Namespace, Name: "vm-0"}, vmi)
			if i == 2 {
				require.NoError(t, err)
				assert.Equal(t, virtkit.Running, vmi.Status.Phase)
				assert.Empty(t, vmi.OwnerReferences)
			} else {
				assert.ErrorIs(t, err, store.ErrNotFound)
			}
		})
	}
}

// Nothing new lands on a cordoned node: with every node cordoned a new
// VM's VMI waits, and runs once a node is uncordoned. A placement after
// a cordon, fed to the checker, is reported.
func TestCordonInvariant(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := NewHarness(ctx, HarnessOptions{Seed: 5})
	require.NoError(t, err)
	defer func() { require.NoError(t, h.Close()) }()
	chk, vs := runOps(ctx, t, h, []Op{
		{Name: "cordon", Target: "node-1"}, {Name: "cordon", Target: "node-2"}, {Name: "cordon", Target: "node-3"},
		{Name: "apply-vm", Target: "vm-0", N: 8, Advance: 30000},
	})
	require.Empty(t, vs)
	vmi := &virtkit.VirtualMachineInstance{}
	require.NoError(t, h.Store.Get(ctx, store.Key{Namespace: Namespace, Name: "vm-0"}, vmi))
	assert.Empty(t, vmi.Status.NodeName, "placed on a cordoned node")
	_, vs = runOps(ctx, t, h, []Op{{Name: "uncordon", Target: "node-2", Advance: 30000}})
	require.Empty(t, vs)
	require.NoError(t, h.Store.Get(ctx, store.Key{Namespace: Namespace, Name: "vm-0"}, vmi))
	assert.Equal(t, virtkit.Running, vmi.Status.Phase)
	assert.Equal(t, "node-2", vmi.Status.NodeName)

	t0 := h.Clock.Now()
	var out []Violation
	node := &virtkit.Node{}
	node.Name, node.Spec.Unschedulable = "node-9", true
	chk.lifeChange(9, Change{At: t0, Type: store.Modified, Object: node}, &out)
	placed := &virtkit.VirtualMachineInstance{}
	placed.Namespace, placed.Name, placed.UID, placed.Status.NodeName = Namespace, "x", "uid-x", "node-9"
	chk.lifeChange(9, Change{At: t0.Add(cordonSlack), Type: store.Modified, Object: placed}, &out)
	assert.Empty(t, out, "a placement decided just before the cordon may land within the scheduler's window")
	placed.UID = "uid-y"
	chk.lifeChange(9, Change{At: t0.Add(cordonSlack + time.Second), Type: store.Modified, Object: placed}, &out)
	assert.Equal(t, []string{InvCordon}, invariantsOf(out))
}

// A VM's VMI without its SuccessfulCreate event, and a completed
// migration without Migrating and Migrated, are reported.
func TestEventInvariantReportsMissingEvents(t *testing.T) {
	chk := newChecker(&Harness{life: &lifecycleState{}})
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name, vmi.UID = Namespace, "vm-0", "uid-vmi"
	ctrl := true
	vmi.OwnerReferences = []metav1.OwnerReference{{Kind: virtkit.KindVirtualMachine, Name: "vm-0", UID: "uid-vm", Controller: &ctrl}}
	vmi.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{Completed: true}
	var out []Violation
	chk.lifeChange(0, Change{Type: store.Added, Object: vmi}, &out)
	chk.eventsFinal(1, &out)
	assert.Equal(t, []string{InvLifecycleEvents, InvLifecycleEvents, InvLifecycleEvents}, invariantsOf(out))

	out = nil
	chk.reported = map[string]bool{}
	for _, ev := range []struct {
		uid    string
		reason string
	}{{"uid-vm", virtkit.EventReasonSuccessfulCreate}, {"uid-vmi", virtkit.EventReasonMigrating}, {"uid-vmi", virtkit.EventReasonMigrated}} {
		e := &virtkit.Event{Reason: ev.reason, Note: "Created virtual machine instance vm-0"}
		e.Regarding.UID = types.UID(ev.uid)
		chk.lifeChange(2, Change{Type: store.Added, Object: e}, &out)
	}
	chk.eventsFinal(3, &out)
	assert.Empty(t, out)
}
