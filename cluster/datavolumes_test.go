package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/store"
)

const dvVMManifest = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: %[1]s
spec:
  runStrategy: Always
  dataVolumeTemplates:
  - metadata:
      name: %[1]s-root
    spec:
      source:
        http:
          url: %[2]s
      storage:
        resources:
          requests:
            storage: 8Mi
  template:
    spec:
      domain:
        devices:
          disks:
          - name: root
            disk: {bus: virtio}
        resources:
          requests:
            memory: 64Mi
      volumes:
      - name: root
        dataVolume:
          name: %[1]s-root
`

// A KubeVirt VM whose disk comes from a dataVolumeTemplates HTTP import
// runs on the embedded default: the template makes an owned DataVolume,
// the import worker fetches and converts the qcow2 from a real loopback
// server, the VMI waits for it (DataVolumesReady) and runs on the node that
// holds the disk. A 404 fails the DataVolume and the VM shows
// DataVolumeError. Deleting the VM collects its DataVolume.
func TestDataVolumeTemplateImportRunsVM(t *testing.T) {
	dir := t.TempDir()
	testenv.DiskFixture(t, dir, "disk", 4<<20, 1<<20, "marker")
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	storageDir := t.TempDir()
	c, err := cluster.New(cluster.Options{Storage: cluster.StorageOptions{Dir: storageDir, ImportRetries: 1,
		AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}})
	require.NoError(t, err)
	go func() { _ = c.Start(ctx) }()

	objs, err := virtkit.DecodeBytes(fmt.Appendf(nil, dvVMManifest, "good", srv.URL+"/disk.qcow2"))
	require.NoError(t, err)
	require.NoError(t, c.Apply(ctx, objs...))

	vmi, err := c.WaitForVMI(ctx, "default", "good", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err)
	assert.True(t, virtkit.HasCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceDataVolumesReady, virtkit.ConditionTrue, virtkit.AllDVsReadyReason))
	dv := &virtkit.DataVolume{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: "good-root"}, dv))
	assert.Equal(t, virtkit.DataVolumeSucceeded, dv.Status.Phase)
	assert.Equal(t, virtkit.DataVolumeProgress("100.00%"), dv.Status.Progress)
	assert.Equal(t, vmi.Status.NodeName, dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation], "the VMI runs where its local disk is")
	assert.True(t, virtkit.HasCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable, virtkit.ConditionFalse, virtkit.DisksNotLiveMigratableReason),
		"a node-local disk does not migrate")
	ready := dv.Status.Condition(virtkit.DataVolumeReady)
	require.NotNil(t, ready)
	assert.Equal(t, virtkit.ConditionTrue, ready.Status)
	disk, err := os.ReadFile(filepath.Join(storageDir, vmi.Status.NodeName, "dv", "default", "good-root.img"))
	require.NoError(t, err)
	assert.Len(t, disk, 8<<20, "converted to raw and resized to the request")
	assert.Equal(t, "marker", string(disk[1<<20:1<<20+6]))

	objs, err = virtkit.DecodeBytes(fmt.Appendf(nil, dvVMManifest, "bad", srv.URL+"/missing.qcow2"))
	require.NoError(t, err)
	require.NoError(t, c.Apply(ctx, objs...))
	_, err = c.WaitForVM(ctx, "default", "bad", cluster.VMPrintableStatusIs(virtkit.VirtualMachineStatusDataVolumeError))
	require.NoError(t, err)
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: "bad-root"}, dv))
	assert.Equal(t, virtkit.DataVolumeFailed, dv.Status.Phase)
	running := dv.Status.Condition(virtkit.DataVolumeRunning)
	require.NotNil(t, running)
	assert.Equal(t, virtkit.DataVolumeReasonError, running.Reason)
	assert.Contains(t, running.Message, "404")
	badVMI, err := c.WaitForVMI(ctx, "default", "bad", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && virtkit.HasCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceDataVolumesReady, virtkit.ConditionFalse, virtkit.NotAllDVsReadyReason)
	})
	require.NoError(t, err)
	assert.Empty(t, badVMI.Status.NodeName, "a VMI waiting for its DataVolumes is not placed")
	assert.Equal(t, virtkit.Pending, badVMI.Status.Phase)

	vm := &virtkit.VirtualMachine{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: "bad"}, vm))
	require.NoError(t, c.Store().Delete(ctx, vm, store.DeleteOptions{}))
	_, err = cluster.WaitFor(ctx, c.Store(), store.Key{Namespace: "default", Name: "bad-root"},
		func() *virtkit.DataVolume { return &virtkit.DataVolume{} }, &virtkit.DataVolumeList{}, cluster.Gone[*virtkit.DataVolume]())
	require.NoError(t, err, "the VM's DataVolume is collected with it")
}

// applyBlankDataVolumeVM starts a cluster over a fresh storage directory
// and applies dvVMManifest's VM name with a blank DataVolume, the manifest
// rewritten by edit; it returns the cluster and the storage directory.
func applyBlankDataVolumeVM(ctx context.Context, t *testing.T, name string, edit func(string) string) (*cluster.Cluster, string) {
	t.Helper()
	storageDir := t.TempDir()
	c, err := cluster.New(cluster.Options{Storage: cluster.StorageOptions{Dir: storageDir,
		AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}})
	require.NoError(t, err)
	go func() { _ = c.Start(ctx) }()
	manifest := strings.Replace(fmt.Sprintf(dvVMManifest, name, "http://127.0.0.1:1/unused"), "      source:\n        http:\n          url: http://127.0.0.1:1/unused\n",
		"      source:\n        blank: {}\n", 1)
	objs, err := virtkit.DecodeBytes([]byte(edit(manifest)))
	require.NoError(t, err)
	require.NoError(t, c.Apply(ctx, objs...))
	return c, storageDir
}

// A ReadWriteMany DataVolume lands on the shared class: its VMI is not
// pinned, stays live-migratable and moves to the other node with its disk
// still in place.
func TestSharedDataVolumeMigrates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, storageDir := applyBlankDataVolumeVM(ctx, t, "rwx", func(m string) string {
		return strings.Replace(m, "      storage:\n", "      storage:\n        accessModes: [ReadWriteMany]\n", 1)
	})
	vmi, err := c.WaitForVMI(ctx, "default", "rwx", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.IsRunning() && virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable)
	})
	require.NoError(t, err)
	from := vmi.Status.NodeName
	dv := &virtkit.DataVolume{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: "rwx-root"}, dv))
	assert.Equal(t, "shared", dv.Annotations[virtkit.DataVolumeStorageClassAnnotation])
	assert.FileExists(t, filepath.Join(storageDir, "shared", "dv", "default", "rwx-root.img"))

	require.NoError(t, c.Apply(ctx, &virtkit.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "move"}, Spec: virtkit.VirtualMachineInstanceMigrationSpec{VMIName: "rwx"}}))
	done, err := cluster.WaitFor(ctx, c.Store(), store.Key{Namespace: "default", Name: "move"},
		func() *virtkit.VirtualMachineInstanceMigration { return &virtkit.VirtualMachineInstanceMigration{} },
		&virtkit.VirtualMachineInstanceMigrationList{},
		func(m *virtkit.VirtualMachineInstanceMigration, found bool) bool { return found && m.IsFinal() })
	require.NoError(t, err)
	require.Equal(t, virtkit.MigrationSucceeded, done.Status.Phase)
	vmi, err = c.WaitForVMI(ctx, "default", "rwx", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.IsRunning() && v.Status.NodeName != from
	})
	require.NoError(t, err)
	assert.NotEqual(t, from, vmi.Status.NodeName)
}
