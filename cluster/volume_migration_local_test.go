package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// localDV is a DataVolume of 8Mi on the default (node-local) class
// filled from source (YAML).
func localDV(t *testing.T, name, source string) virtkit.Object {
	t.Helper()
	objs, err := virtkit.DecodeBytes(fmt.Appendf(nil, `apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: %s
spec:
  source: %s
  storage:
    resources:
      requests:
        storage: 8Mi
`, name, source))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	return objs[0]
}

// A VM on a node-local DataVolume whose template moves the disk to
// another node-local DataVolume (updateVolumesStrategy: Migration): the
// guest migrates to the node holding the new DataVolume with its disk
// copied over the migration link, then runs on the new DataVolume. A
// destination on the VMI's own node cannot be reached by a migration:
// the volume migration fails and the guest keeps its disk.
func TestVolumeMigrationNodeLocal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, storageDir := applyBlankDataVolumeVM(ctx, t, "lm", func(m string) string {
		return strings.Replace(m, "spec:\n  runStrategy: Always\n", "spec:\n  runStrategy: Always\n  updateVolumesStrategy: Migration\n", 1)
	})
	vmi, err := c.WaitForVMI(ctx, "default", "lm", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err)
	from := vmi.Status.NodeName
	src := filepath.Join(storageDir, from, "dv", "default", "lm-root.img")
	f, err := os.OpenFile(src, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("guest-data"), 1<<20)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	// The new DataVolume is filled on the other node (the one with fewer
	// volumes).
	require.NoError(t, c.Apply(ctx, localDV(t, "lm-root2", "{blank: {}}")))
	dv := waitDataVolume(ctx, t, c, "lm-root2")
	to := dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation]
	require.NotEmpty(t, to)
	require.NotEqual(t, from, to)

	setRootDataVolume(ctx, t, c, "lm", "lm-root2")
	vmi, err = c.WaitForVMI(ctx, "default", "lm", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.IsRunning() && v.Spec.Volumes[0].DataVolume != nil && v.Spec.Volumes[0].DataVolume.Name == "lm-root2" &&
			virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceVolumesChange) == nil
	})
	require.NoError(t, err)
	assert.Equal(t, to, vmi.Status.NodeName, "the guest moved to the node holding the new disk")
	assert.Empty(t, vmi.Status.MigratedVolumes)
	disk, err := os.ReadFile(filepath.Join(storageDir, to, "dv", "default", "lm-root2.img"))
	require.NoError(t, err)
	assert.Equal(t, "guest-data", string(disk[1<<20:1<<20+10]), "the disk's bytes were copied to the new DataVolume")
	migs := &virtkit.VirtualMachineInstanceMigrationList{}
	require.NoError(t, c.Store().List(ctx, migs, store.ListOptions{Namespace: "default"}))
	require.Len(t, migs.Items, 1)
	assert.Equal(t, virtkit.MigrationSucceeded, migs.Items[0].Status.Phase)
	assert.Equal(t, "lm", migs.Items[0].Labels[virtkit.VolumesUpdateMigrationLabel])

	// A clone of the new disk is filled where its source is: on the
	// VMI's node, which a migration cannot go to.
	require.NoError(t, c.Apply(ctx, localDV(t, "lm-root3", "{pvc: {name: lm-root2, namespace: default}}")))
	dv = waitDataVolume(ctx, t, c, "lm-root3")
	require.Equal(t, to, dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation])
	setRootDataVolume(ctx, t, c, "lm", "lm-root3")
	vmi, err = c.WaitForVMI(ctx, "default", "lm", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && virtkit.HasCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceVolumesChange,
			virtkit.ConditionFalse, virtkit.VolumeMigrationFailedReason)
	})
	require.NoError(t, err)
	vc := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceVolumesChange)
	assert.Contains(t, vc.Message, "lm-root3 lives on node-local storage of node "+to)
	assert.True(t, vmi.IsRunning())
	assert.Equal(t, to, vmi.Status.NodeName)
	assert.Equal(t, "lm-root2", vmi.Spec.Volumes[0].DataVolume.Name, "the guest keeps its disk")
	vm, err := c.WaitForVM(ctx, "default", "lm", func(v *virtkit.VirtualMachine, found bool) bool {
		return found && virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineRestartRequired) != nil
	})
	require.NoError(t, err)
	assert.Equal(t, "VolumeMigrationFailed", virtkit.GetCondition(vm.Status.Conditions, virtkit.VirtualMachineRestartRequired).Reason)
}

func waitDataVolume(ctx context.Context, t *testing.T, c *cluster.Cluster, name string) *virtkit.DataVolume {
	t.Helper()
	dv, err := cluster.WaitFor(ctx, c.Store(), store.Key{Namespace: "default", Name: name},
		func() *virtkit.DataVolume { return &virtkit.DataVolume{} }, &virtkit.DataVolumeList{},
		func(d *virtkit.DataVolume, found bool) bool {
			return found && d.Status.Phase == virtkit.DataVolumeSucceeded
		})
	require.NoError(t, err)
	return dv
}

// setRootDataVolume points the VM's root volume at DataVolume dv, as a
// user's edit (retried when a controller wrote the VM meanwhile).
func setRootDataVolume(ctx context.Context, t *testing.T, c *cluster.Cluster, vmName, dv string) {
	t.Helper()
	require.NoError(t, store.RetryOnConflict(ctx, store.Backoff{}, func(ctx context.Context) error {
		vm := &virtkit.VirtualMachine{}
		if err := c.Store().Get(ctx, store.Key{Namespace: "default", Name: vmName}, vm); err != nil {
			return err
		}
		vm.Spec.Template.Spec.Volumes[0].DataVolume.Name = dv
		return c.Store().Update(ctx, vm)
	}))
}
