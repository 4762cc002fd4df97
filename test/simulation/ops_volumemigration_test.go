package simulation

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// A running VM's claim moved by migrate-volume: adding the volume waits
// for a restart, moving it to another claim migrates the guest with a
// storage copy, and afterwards the guest's disk is on the new claim and
// the invariants hold throughout.
func TestVolumeMigrationOps(t *testing.T) {
	runVolumeMigrationSteps(t, []volumeMigrationStep{
		{op: Op{Name: "apply-vm", Target: "vm-0", N: 0, Advance: 30000}},
		{op: Op{Name: "migrate-volume", Target: "vm-0", N: 0, Advance: 10000}, restart: true},
		{op: Op{Name: "restart", Target: "vm-0", Advance: 30000}, claim: "vm-0-data-0"},
		{op: Op{Name: "migrate-volume", Target: "vm-0", N: 1, Advance: 30000}, claim: "vm-0-data-1", migrations: 1},
		{op: Op{Name: "migrate-volume", Target: "vm-0", N: 0, Advance: 30000}, claim: "vm-0-data-0", migrations: 2},
	})
}

// The same on node-local DataVolumes: the op creates a blank DataVolume,
// filled on the least loaded node; a restart puts the guest there, and a
// move to another node-local DataVolume (filled on another node) takes
// the guest to that node with its disk, and the move back returns it.
func TestVolumeMigrationOpsNodeLocal(t *testing.T) {
	runVolumeMigrationSteps(t, []volumeMigrationStep{
		{op: Op{Name: "apply-vm", Target: "vm-0", N: 0, Advance: 30000}},
		{op: Op{Name: "migrate-volume", Target: "vm-0", N: volumeClaims, Advance: 10000}, restart: true},
		{op: Op{Name: "restart", Target: "vm-0", Advance: 30000}, claim: "vm-0-local-0"},
		{op: Op{Name: "migrate-volume", Target: "vm-0", N: volumeClaims + 1, Advance: 30000}, claim: "vm-0-local-1", migrations: 1},
		{op: Op{Name: "migrate-volume", Target: "vm-0", N: volumeClaims, Advance: 30000}, claim: "vm-0-local-0", migrations: 2},
	})
}

type volumeMigrationStep struct {
	op         Op
	claim      string // the VMI's data claim and the domain's disk file, "" for none
	restart    bool   // the VM asks for a restart
	migrations int    // volume migrations of the VM
}

func runVolumeMigrationSteps(t *testing.T, steps []volumeMigrationStep) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := NewHarness(ctx, HarnessOptions{Seed: 1})
	require.NoError(t, err)
	defer func() { _ = h.Close() }()
	table := operationsByName()
	chk := newChecker(h)
	uctx := asUser(ctx)
	key := store.Key{Namespace: Namespace, Name: "vm-0"}
	for i, tc := range steps {
		err := table[tc.op.Name].run(uctx, h, tc.op)
		for try := 0; errors.Is(err, store.ErrConflict) && try < 3; try++ {
			err = table[tc.op.Name].run(uctx, h, tc.op) // a controller wrote the VM meanwhile
		}
		require.NoError(t, err, "step %d %s", i, tc.op)
		chk.afterOp(i, tc.op, false)
		require.NoError(t, h.Advance(ctx, tc.op.Advance.Duration()))
		vmi := &virtkit.VirtualMachineInstance{}
		require.NoError(t, h.Store.Get(uctx, key, vmi))
		require.Equal(t, virtkit.Running, vmi.Status.Phase, "step %d %s", i, tc.op)
		claim := ""
		for j := range vmi.Spec.Volumes {
			if vmi.Spec.Volumes[j].Name == dataVolume {
				claim = volumeClaim(&vmi.Spec.Volumes[j])
			}
		}
		assert.Equal(t, tc.claim, claim, "step %d %s: the VMI's claim", i, tc.op)
		assert.Empty(t, vmi.Status.MigratedVolumes, "step %d %s", i, tc.op)
		x, err := h.Host(vmi.Status.NodeName).XML(uctx, Namespace+"_vm-0")
		require.NoError(t, err)
		dom := &libvirtxml.Domain{}
		require.NoError(t, dom.Unmarshal(x))
		file := diskFile(dom, dataVolume)
		if tc.claim == "" {
			assert.Empty(t, file, "step %d %s", i, tc.op)
		} else {
			assert.Equal(t, tc.claim+".img", filepath.Base(file), "step %d %s: the guest's disk", i, tc.op)
		}
		dv := &virtkit.DataVolume{}
		if tc.claim != "" && h.Store.Get(uctx, store.Key{Namespace: Namespace, Name: tc.claim}, dv) == nil {
			assert.Equal(t, vmi.Status.NodeName, dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation], "step %d %s: the guest runs where its disk is", i, tc.op)
		}
		vm := &virtkit.VirtualMachine{}
		require.NoError(t, h.Store.Get(uctx, key, vm))
		assert.Equal(t, tc.restart, virtkit.GetCondition(vm.Status.Conditions, virtkit.VirtualMachineRestartRequired) != nil,
			"step %d %s: RestartRequired", i, tc.op)
		migs := &virtkit.VirtualMachineInstanceMigrationList{}
		require.NoError(t, h.Store.List(uctx, migs, store.ListOptions{Namespace: Namespace}))
		n := 0
		for _, m := range migs.Items {
			if m.Labels[virtkit.VolumesUpdateMigrationLabel] == "vm-0" {
				n++
				assert.Equal(t, virtkit.MigrationSucceeded, m.Status.Phase, "step %d: %s %+v", i, m.Name, m.Status.MigrationState)
			}
		}
		assert.Equal(t, tc.migrations, n, "step %d %s: volume migrations", i, tc.op)
		vs, err := chk.final(uctx, i)
		require.NoError(t, err)
		assert.Empty(t, vs, "step %d %s", i, tc.op)
	}
}
