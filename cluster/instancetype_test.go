package cluster_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

const itVMManifest = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: sized
spec:
  runStrategy: Always
  instancetype:
    name: u1.medium
  preference:
    name: fedora
  template:
    spec:
      domain:
        devices:
          disks:
          - name: root
      volumes:
      - name: root
        containerDisk:
          image: quay.io/containerdisks/fedora:41
`

func decodeAll(t *testing.T, data []byte) []virtkit.Object {
	t.Helper()
	objs, err := virtkit.DecodeBytes(data)
	require.NoError(t, err)
	return objs
}

// A VM sized by u1.medium from the common instancetypes manifest runs
// with the instancetype's CPU and memory and the preference's defaults;
// its instancetype is kept in a revision, so an edit of u1.medium changes
// neither the running VMI nor the VMI of a restart, while a new VM gets
// the edited one.
func TestInstancetypeExpandedAndRevisionKept(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := cluster.New(cluster.Options{})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(runCtx) }()
	defer func() { stop(); <-done }()

	common, err := os.ReadFile(filepath.Join("..", "testdata", "instancetypes", "common.yaml"))
	require.NoError(t, err)
	require.NoError(t, c.Apply(ctx, decodeAll(t, common)...))
	require.NoError(t, c.Apply(ctx, decodeAll(t, []byte(itVMManifest))...))

	vmi, err := c.WaitForVMI(ctx, "default", "sized", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err)
	cpu := vmi.Spec.Domain.CPU
	require.NotNil(t, cpu)
	assert.Equal(t, [3]uint32{1, 1, 1}, [3]uint32{cpu.Sockets, cpu.Cores, cpu.Threads})
	require.NotNil(t, vmi.Spec.Domain.Memory)
	assert.Equal(t, "4Gi", vmi.Spec.Domain.Memory.Guest.String())
	assert.Equal(t, virtkit.DiskBusVirtio, vmi.Spec.Domain.Devices.Disks[0].Disk.Bus, "from the preference")
	require.NotNil(t, vmi.Spec.Domain.Firmware.Bootloader)
	assert.NotNil(t, vmi.Spec.Domain.Firmware.Bootloader.EFI, "preferredUseEfi")

	vm, err := c.WaitForVM(ctx, "default", "sized", func(vm *virtkit.VirtualMachine, ok bool) bool {
		return ok && vm.Status.InstancetypeRef != nil && vm.Status.PreferenceRef != nil
	})
	require.NoError(t, err)
	ref := vm.Status.InstancetypeRef
	assert.Equal(t, "u1.medium", ref.Name)
	assert.Equal(t, virtkit.KindVirtualMachineClusterInstancetype, ref.Kind, "the kind defaults to the cluster kind")
	require.NotNil(t, ref.ControllerRevisionRef)
	cr := &virtkit.ControllerRevision{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: ref.ControllerRevisionRef.Name}, cr))
	assert.Contains(t, string(cr.Data.Raw), `"u1.medium"`)

	// Edit u1.medium: 2 vCPUs, 8Gi.
	edited := decodeAll(t, common)[1].(*virtkit.VirtualMachineClusterInstancetype)
	require.Equal(t, "u1.medium", edited.Name)
	edited.Spec.CPU.Guest = 2
	edited.Spec.Memory.Guest = resource.MustParse("8Gi")
	require.NoError(t, c.Apply(ctx, edited))

	require.NoError(t, actions.Restart(ctx, c.Store(), store.Key{Namespace: "default", Name: "sized"}, actions.RestartOptions{}))
	old := vmi.UID
	vmi, err = c.WaitForVMI(ctx, "default", "sized", func(v *virtkit.VirtualMachineInstance, ok bool) bool {
		return ok && v.UID != old && v.Status.Phase == virtkit.Running
	})
	require.NoError(t, err)
	assert.Equal(t, uint32(1), vmi.Spec.Domain.CPU.Sockets, "the restarted VMI keeps the revision's CPU")
	assert.Equal(t, "4Gi", vmi.Spec.Domain.Memory.Guest.String(), "and its memory")

	// A new VM gets the edited instancetype.
	fresh := decodeAll(t, []byte(itVMManifest))[0].(*virtkit.VirtualMachine)
	fresh.Name = "fresh"
	require.NoError(t, c.Apply(ctx, fresh))
	vmi, err = c.WaitForVMI(ctx, "default", "fresh", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err)
	assert.Equal(t, uint32(2), vmi.Spec.Domain.CPU.Sockets)
	assert.Equal(t, "8Gi", vmi.Spec.Domain.Memory.Guest.String())

	// Deleting a VM deletes the revisions it made.
	freshVM, err := c.WaitForVM(ctx, "default", "fresh", func(vm *virtkit.VirtualMachine, ok bool) bool {
		return ok && vm.Status.InstancetypeRef != nil && vm.Status.InstancetypeRef.ControllerRevisionRef != nil
	})
	require.NoError(t, err)
	revKey := store.Key{Namespace: "default", Name: freshVM.Status.InstancetypeRef.ControllerRevisionRef.Name}
	require.NoError(t, c.Store().Get(ctx, revKey, cr))
	require.NoError(t, c.Store().Delete(ctx, freshVM, store.DeleteOptions{}))
	_, err = c.WaitForVM(ctx, "default", "fresh", func(_ *virtkit.VirtualMachine, ok bool) bool { return !ok })
	require.NoError(t, err)
	assert.ErrorIs(t, c.Store().Get(ctx, revKey, cr), store.ErrNotFound)
}

// Apply refuses a VM whose template conflicts with its instancetype, or
// that names one that does not exist, with KubeVirt's paths.
func TestApplyInstancetypeAdmission(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := store.NewMemory()
	common, err := os.ReadFile(filepath.Join("..", "testdata", "instancetypes", "common.yaml"))
	require.NoError(t, err)
	require.NoError(t, cluster.Apply(ctx, st, decodeAll(t, common)...))
	catalogue, err := virtkit.CommonInstancetypes()
	require.NoError(t, err)
	for _, o := range catalogue {
		if o.GetName() == "cx1.large" {
			require.NoError(t, cluster.Apply(ctx, st, o))
		}
	}

	tests := []struct {
		name  string
		edit  func(vm *virtkit.VirtualMachine)
		paths []string
	}{
		{"valid", func(*virtkit.VirtualMachine) {}, nil},
		{"sockets conflict", func(vm *virtkit.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.CPU = &virtkit.CPU{Sockets: 2}
		}, []string{"spec.template.spec.domain.cpu.sockets"}},
		{"memory request conflict", func(vm *virtkit.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Resources.Requests = virtkit.ResourceList{virtkit.ResourceMemory: resource.MustParse("1Gi")}
		}, []string{"spec.template.spec.domain.resources.requests.memory"}},
		{"missing instancetype", func(vm *virtkit.VirtualMachine) { vm.Spec.Instancetype.Name = "u9.huge" },
			[]string{"spec.instancetype.name"}},
		{"missing preference", func(vm *virtkit.VirtualMachine) { vm.Spec.Preference.Name = "plan9" },
			[]string{"spec.preference.name"}},
		{"preference requirements", func(vm *virtkit.VirtualMachine) {
			vm.Spec.Instancetype.Name = "u1.small"
			vm.Spec.Preference.Name = "windows.2k22"
		}, []string{"spec.instancetype"}}, // KubeVirt reports the first unmet requirement
		// cx1 asks for guest NUMA, dedicated CPUs and hugepages: admitted,
		// as KubeVirt admits it; whether a node can run it is the node's
		// to say.
		{"cx1 admitted", func(vm *virtkit.VirtualMachine) {
			vm.Spec.Instancetype.Name = "cx1.large"
		}, nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := decodeAll(t, []byte(itVMManifest))[0].(*virtkit.VirtualMachine)
			vm.Name = "vm" + string(rune('a'+i))
			tt.edit(vm)
			err := cluster.Apply(ctx, st, vm)
			if tt.paths == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, cluster.ErrInvalidObject)
			var got []string
			for _, e := range cluster.FieldErrors(err) {
				got = append(got, e.Field)
			}
			assert.Equal(t, tt.paths, got)
		})
	}
}

// Namespaced kinds are looked up in the VM's namespace, and a VM that
// names a revision gets the instancetype kept in it, not the current one.
func TestInstancetypeNamespacedKindsAndRevisionName(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := cluster.New(cluster.Options{})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(runCtx) }()
	defer func() { stop(); <-done }()

	require.NoError(t, c.Apply(ctx, decodeAll(t, []byte(`apiVersion: instancetype.kubevirt.io/v1beta1
kind: VirtualMachineInstancetype
metadata:
  name: small
  namespace: default
spec:
  cpu: {guest: 2}
  memory: {guest: 256Mi}
---
apiVersion: instancetype.kubevirt.io/v1beta1
kind: VirtualMachinePreference
metadata:
  name: cores
  namespace: default
spec:
  cpu: {preferredCPUTopology: cores}
---
apiVersion: apps/v1
kind: ControllerRevision
metadata:
  name: small-v0
  namespace: default
revision: 1
data:
  apiVersion: instancetype.kubevirt.io/v1beta1
  kind: VirtualMachineInstancetype
  metadata: {name: small, namespace: default}
  spec:
    cpu: {guest: 3}
    memory: {guest: 128Mi}
`))...))

	tests := []struct {
		name, revision string
		cores          uint32
		memory         string
	}{
		{"current", "", 2, "256Mi"},
		{"pinned", "small-v0", 3, "128Mi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := decodeAll(t, []byte(itVMManifest))[0].(*virtkit.VirtualMachine)
			vm.Name = tt.name
			vm.Spec.Instancetype = &virtkit.InstancetypeMatcher{Name: "small", Kind: virtkit.KindVirtualMachineInstancetype, RevisionName: tt.revision}
			vm.Spec.Preference = &virtkit.PreferenceMatcher{Name: "cores", Kind: virtkit.KindVirtualMachinePreference}
			require.NoError(t, c.Apply(ctx, vm))
			vmi, err := c.WaitForVMI(ctx, "default", tt.name, cluster.VMIPhaseIs(virtkit.Running))
			require.NoError(t, err)
			assert.Equal(t, [3]uint32{1, tt.cores, 1}, [3]uint32{vmi.Spec.Domain.CPU.Sockets, vmi.Spec.Domain.CPU.Cores, vmi.Spec.Domain.CPU.Threads})
			assert.Equal(t, tt.memory, vmi.Spec.Domain.Memory.Guest.String())
		})
	}
}
