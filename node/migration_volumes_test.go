package node_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// A VM whose template moves its running claim with updateVolumesStrategy
// Migration: the guest migrates to another node, its disk's bytes are
// copied to the new claim on the way, and afterwards it runs on the new
// claim and the VM's status says which volume moved.
func TestVolumeMigrationCopiesTheClaim(t *testing.T) {
	dir := t.TempDir()
	claims := filepath.Join(dir, "pvc", "default")
	require.NoError(t, os.MkdirAll(claims, 0o755))
	data := bytes.Repeat([]byte("claim-data"), 100<<10)
	require.NoError(t, os.WriteFile(filepath.Join(claims, "old.img"), data, 0o600))
	c := startMigClusterHosts(t, []string{"node-1", "node-2"}, func(name string) sim.Options { return sim.Options{Name: name} },
		sim.Link{}, controller.MigrationOptions{}, nil, func(_ string, o *node.Options) {
			o.Domain.VolumeResolver = &domain.DirResolver{Dir: dir}
		})

	tmpl := migratableVMI("vm", "64Mi")
	strategy := virtkit.UpdateVolumesStrategyMigration
	rs := virtkit.RunStrategyAlways
	tmpl.Spec.Domain.Devices.Disks = []virtkit.Disk{{Name: "data"}}
	tmpl.Spec.Volumes = []virtkit.Volume{{Name: "data", VolumeSource: virtkit.VolumeSource{
		PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{ClaimName: "old"}}}}
	vm := &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "default"},
		Spec: virtkit.VirtualMachineSpec{RunStrategy: &rs, UpdateVolumesStrategy: &strategy,
			Template: &virtkit.VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec}},
	}
	require.NoError(t, c.Apply(c.ctx, vm))
	before, err := c.WaitForVMI(c.ctx, "default", "vm", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.IsRunning() && v.IsMigratable()
	})
	require.NoError(t, err)

	// The controllers write the VM too: retry on a conflict.
	require.NoError(t, store.RetryOnConflict(c.ctx, store.Backoff{}, func(ctx context.Context) error {
		got := &virtkit.VirtualMachine{}
		if err := c.Store().Get(ctx, store.KeyOf(vm), got); err != nil {
			return err
		}
		got.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "new"
		return c.Store().Update(ctx, got)
	}))

	after, err := c.WaitForVMI(c.ctx, "default", "vm", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Spec.Volumes[0].PersistentVolumeClaim.ClaimName == "new" && len(v.Status.MigratedVolumes) == 0
	})
	require.NoError(t, err)
	assert.NotEqual(t, before.Status.NodeName, after.Status.NodeName, "the guest moved")
	copied, err := os.ReadFile(filepath.Join(claims, "new.img"))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, copied), "the new claim holds the old claim's bytes")
	x, err := c.hosts[after.Status.NodeName].XML(c.ctx, "default_vm")
	require.NoError(t, err)
	assert.Contains(t, x, filepath.Join(claims, "new.img"), "the guest runs on the new claim")
	assert.Nil(t, virtkit.GetCondition(after.Status.Conditions, virtkit.VirtualMachineInstanceVolumesChange))

	final, err := c.WaitForVM(c.ctx, "default", "vm", func(v *virtkit.VirtualMachine, found bool) bool {
		return found && v.Status.VolumeUpdateState != nil && v.Status.VolumeUpdateState.VolumeMigrationState != nil &&
			virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineRestartRequired) == nil
	})
	require.NoError(t, err)
	mv := final.Status.VolumeUpdateState.VolumeMigrationState.MigratedVolumes
	require.Len(t, mv, 1)
	assert.Equal(t, "data", mv[0].VolumeName)
	assert.Equal(t, "old", mv[0].SourcePVCInfo.ClaimName)
	assert.Equal(t, "new", mv[0].DestinationPVCInfo.ClaimName)
}
