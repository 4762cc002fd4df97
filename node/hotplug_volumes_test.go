package node_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// domainDisks maps the user aliases of a domain's disks to their targets.
func domainDisks(t *testing.T, h *sim.Host, name string) map[string]string {
	t.Helper()
	x, err := h.XML(context.Background(), node.DomainName("default", name))
	require.NoError(t, err)
	dom := &libvirtxml.Domain{}
	require.NoError(t, dom.Unmarshal(x))
	out := map[string]string{}
	for _, d := range dom.Devices.Disks {
		if d.Alias != nil && d.Target != nil {
			out[d.Alias.Name] = d.Target.Dev + "/" + d.Target.Bus
		}
	}
	return out
}

func withHotplugVolume(vmi *virtkit.VirtualMachineInstance, name, claim string, bus virtkit.DiskBus) *virtkit.VirtualMachineInstance {
	out := vmi.DeepCopy()
	out.Spec.Volumes = append(out.Spec.Volumes, virtkit.Volume{Name: name, VolumeSource: virtkit.VolumeSource{
		PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{ClaimName: claim, Hotpluggable: true}}})
	out.Spec.Domain.Devices.Disks = append(out.Spec.Domain.Devices.Disks, virtkit.Disk{Name: name,
		DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: bus}}})
	return out
}

func volumeStatus(v *virtkit.VirtualMachineInstance, name string) (virtkit.VolumeStatus, bool) {
	for _, vs := range v.Status.VolumeStatus {
		if vs.Name == name {
			return vs, true
		}
	}
	return virtkit.VolumeStatus{}, false
}

// A hot-pluggable volume added to a running VMI's spec is attached to its
// domain on the scsi bus, reported Ready, kept across a live migration,
// and detached when it leaves the spec.
func TestHotplugVolumeAttachMigrateDetachOnSim(t *testing.T) {
	c := startMigCluster(t, 2, sim.Link{Bandwidth: 2 << 30}, controller.MigrationOptions{})
	vmi := c.runningVMI(t, migratableVMI("hp", "128Mi"))
	source := vmi.Status.NodeName
	require.NotContains(t, domainDisks(t, c.hosts[source], "hp"), "ua-data")

	require.NoError(t, c.Apply(c.ctx, withHotplugVolume(vmi, "data", "data-claim", virtkit.DiskBusSCSI)))
	ready, err := c.WaitForVMI(c.ctx, "default", "hp", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		vs, ok := volumeStatus(v, "data")
		return found && ok && vs.Phase == virtkit.VolumeReady
	})
	require.NoError(t, err)
	vs, _ := volumeStatus(ready, "data")
	assert.Equal(t, "sda", vs.Target)
	assert.Equal(t, virtkit.VolumeReadyReason, vs.Reason)
	assert.Equal(t, "Successfully attach hotplugged volume data to VM", vs.Message)
	assert.NotNil(t, vs.HotplugVolume)
	assert.Equal(t, "sda/scsi", domainDisks(t, c.hosts[source], "hp")["ua-data"])

	// Live migration keeps the disk.
	mig, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(vmi), actions.MigrateOptions{})
	require.NoError(t, err)
	done := c.waitMigration(t, mig, "Succeeded", isReleased)
	require.Equal(t, virtkit.MigrationSucceeded, done.Status.Phase)
	// Settled on the target, labels included: the spec change below is a
	// whole-object apply of this copy, and a copy whose node labels lag
	// the controller's would ask to change labels only it may set.
	after, err := c.WaitForVMI(c.ctx, "default", "hp", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.NodeName != source && v.IsRunning() &&
			v.Labels[virtkit.NodeNameLabel] == v.Status.NodeName && v.Labels[virtkit.MigrationTargetNodeNameLabel] == ""
	})
	require.NoError(t, err)
	target := after.Status.NodeName
	assert.Equal(t, "sda/scsi", domainDisks(t, c.hosts[target], "hp")["ua-data"])
	vs, ok := volumeStatus(after, "data")
	require.True(t, ok)
	assert.Equal(t, virtkit.VolumeReady, vs.Phase)

	// Removing it from the spec detaches it.
	removed := after.DeepCopy()
	removed.Spec.Volumes = removed.Spec.Volumes[:len(removed.Spec.Volumes)-1]
	removed.Spec.Domain.Devices.Disks = removed.Spec.Domain.Devices.Disks[:len(removed.Spec.Domain.Devices.Disks)-1]
	require.NoError(t, c.Apply(c.ctx, removed))
	_, err = c.WaitForVMI(c.ctx, "default", "hp", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		_, ok := volumeStatus(v, "data")
		return found && !ok
	})
	require.NoError(t, err)
	assert.NotContains(t, domainDisks(t, c.hosts[target], "hp"), "ua-data")
}

// Changes a running VMI's spec may not take: a hot-plugged disk off the
// scsi bus, and any change besides hot-pluggable volumes.
func TestHotplugVolumeRefusedUpdates(t *testing.T) {
	c := startMigCluster(t, 1, sim.Link{}, controller.MigrationOptions{})
	vmi := c.runningVMI(t, migratableVMI("hpref", "128Mi"))

	for _, tc := range []struct {
		name  string
		edit  func(*virtkit.VirtualMachineInstance) *virtkit.VirtualMachineInstance
		path  string
		etype field.ErrorType
	}{
		{"virtio bus", func(v *virtkit.VirtualMachineInstance) *virtkit.VirtualMachineInstance {
			return withHotplugVolume(v, "data", "c", virtkit.DiskBusVirtio)
		}, "spec.domain.devices.disks[0].disk.bus", field.ErrorTypeInvalid},
		{"not hotpluggable", func(v *virtkit.VirtualMachineInstance) *virtkit.VirtualMachineInstance {
			out := withHotplugVolume(v, "data", "c", virtkit.DiskBusSCSI)
			out.Spec.Volumes[len(out.Spec.Volumes)-1].PersistentVolumeClaim.Hotpluggable = false
			return out
		}, "spec.volumes", field.ErrorTypeForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Apply(c.ctx, tc.edit(vmi))
			require.Error(t, err)
			found := false
			for _, fe := range cluster.FieldErrors(err) {
				found = found || fe.Field == tc.path && fe.Type == tc.etype
			}
			assert.True(t, found, "want %s %s in %v", tc.etype, tc.path, err)
		})
	}
}

// virtctl addvolume on a VM: the request is queued on the VM's status, the
// VM controller puts the volume in the template and the running VMI, the
// node agent attaches it; removevolume takes it out again, without a
// restart (the VMI keeps its UID and no RestartRequired appears).
func TestHotplugVolumeThroughVMRequests(t *testing.T) {
	c := startMigCluster(t, 1, sim.Link{}, controller.MigrationOptions{})
	rs := virtkit.RunStrategyAlways
	tmpl := migratableVMI("vmhp", "64Mi")
	vm := &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Name: "vmhp", Namespace: "default"},
		Spec: virtkit.VirtualMachineSpec{RunStrategy: &rs, Template: &virtkit.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "vmhp"}}, Spec: tmpl.Spec,
		}},
	}
	require.NoError(t, c.Apply(c.ctx, vm))
	key := store.Key{Namespace: "default", Name: "vmhp"}
	vmi, err := c.WaitForVMI(c.ctx, "default", "vmhp", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.IsRunning()
	})
	require.NoError(t, err)

	require.NoError(t, actions.AddVMVolume(c.ctx, c.Store(), key, &virtkit.AddVolumeOptions{Name: "data",
		Disk:         &virtkit.Disk{DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusSCSI}}},
		VolumeSource: &virtkit.HotplugVolumeSource{DataVolume: &virtkit.DataVolumeSource{Name: "data-dv"}}}))
	ready, err := c.WaitForVMI(c.ctx, "default", "vmhp", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		vs, ok := volumeStatus(v, "data")
		return found && ok && vs.Phase == virtkit.VolumeReady
	})
	require.NoError(t, err)
	assert.Equal(t, vmi.UID, ready.UID)
	assert.Contains(t, domainDisks(t, c.hosts[ready.Status.NodeName], "vmhp"), "ua-data")
	got, err := c.WaitForVM(c.ctx, "default", "vmhp", func(v *virtkit.VirtualMachine, found bool) bool {
		return found && len(v.Status.VolumeRequests) == 0
	})
	require.NoError(t, err)
	require.Len(t, got.Spec.Template.Spec.Volumes, 1)
	assert.True(t, got.Spec.Template.Spec.Volumes[0].DataVolume.Hotpluggable)
	assert.False(t, virtkit.IsConditionTrue(got.Status.Conditions, virtkit.VirtualMachineRestartRequired))

	// A VM's VMI takes volumes through its VM only.
	err = actions.AddVMIVolume(c.ctx, c.Store(), key, &virtkit.AddVolumeOptions{Name: "other",
		Disk:         &virtkit.Disk{DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusSCSI}}},
		VolumeSource: &virtkit.HotplugVolumeSource{PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{ClaimName: "other"}}})
	require.ErrorIs(t, err, actions.ErrInvalidAction)
	assert.Contains(t, err.Error(), "VMI default/vmhp is owned by a VM")

	// The same name again is refused.
	err = actions.AddVMVolume(c.ctx, c.Store(), key, &virtkit.AddVolumeOptions{Name: "data",
		Disk:         &virtkit.Disk{DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusSCSI}}},
		VolumeSource: &virtkit.HotplugVolumeSource{PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{ClaimName: "other"}}})
	require.ErrorIs(t, err, actions.ErrConflictingAction)
	assert.Contains(t, err.Error(), "Unable to add volume [data] because volume with that name already exists")

	require.NoError(t, actions.RemoveVMVolume(c.ctx, c.Store(), key, &virtkit.RemoveVolumeOptions{Name: "data"}))
	gone, err := c.WaitForVMI(c.ctx, "default", "vmhp", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		_, ok := volumeStatus(v, "data")
		return found && !ok && len(v.Spec.Volumes) == 0
	})
	require.NoError(t, err)
	assert.Equal(t, vmi.UID, gone.UID)
	assert.NotContains(t, domainDisks(t, c.hosts[gone.Status.NodeName], "vmhp"), "ua-data")
}
