package wire_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/internal/promcheck"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/metrics/wire"
	"github.com/virtkit/virtkit/store"
)

const snapshotVM = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: db
  namespace: default
spec:
  runStrategy: Halted
  dataVolumeTemplates:
  - metadata:
      name: db-root
    spec:
      source:
        blank: {}
      storage:
        resources:
          requests:
            storage: 4Mi
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
          name: db-root
`

// After a snapshot and a restore into a new VM, the embedded cluster's
// control plane serves KubeVirt's snapshot and restore families, with the
// restored disk counted against its source VM.
func TestClusterServesSnapshotFamilies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := cluster.New(cluster.Options{Storage: cluster.StorageOptions{Dir: t.TempDir()}})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	objs, err := virtkit.Decode(strings.NewReader(snapshotVM))
	require.NoError(t, err)
	require.NoError(t, c.Apply(ctx, objs...))
	_, err = cluster.WaitFor(ctx, c.Store(), store.Key{Namespace: "default", Name: "db-root"},
		func() *virtkit.DataVolume { return &virtkit.DataVolume{} }, &virtkit.DataVolumeList{},
		func(dv *virtkit.DataVolume, found bool) bool {
			return found && dv.Status.Phase == virtkit.DataVolumeSucceeded
		})
	require.NoError(t, err)

	group := virtkit.GroupName
	vmRef := virtkit.TypedLocalObjectReference{APIGroup: &group, Kind: virtkit.KindVirtualMachine, Name: "db"}
	require.NoError(t, c.Apply(ctx, &virtkit.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: "default"},
		Spec: virtkit.VirtualMachineSnapshotSpec{Source: vmRef}}))
	_, err = cluster.WaitFor(ctx, c.Store(), store.Key{Namespace: "default", Name: "snap"},
		func() *virtkit.VirtualMachineSnapshot { return &virtkit.VirtualMachineSnapshot{} }, &virtkit.VirtualMachineSnapshotList{},
		func(s *virtkit.VirtualMachineSnapshot, found bool) bool {
			return found && s.Status != nil && s.Status.Phase == virtkit.SnapshotSucceeded
		})
	require.NoError(t, err)
	target := vmRef
	target.Name = "db2"
	require.NoError(t, c.Apply(ctx, &virtkit.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "default"},
		Spec: virtkit.VirtualMachineRestoreSpec{VirtualMachineSnapshotName: "snap", Target: target}}))
	_, err = cluster.WaitFor(ctx, c.Store(), store.Key{Namespace: "default", Name: "back"},
		func() *virtkit.VirtualMachineRestore { return &virtkit.VirtualMachineRestore{} }, &virtkit.VirtualMachineRestoreList{},
		func(r *virtkit.VirtualMachineRestore, found bool) bool {
			return found && r.Status != nil && r.Status.Complete != nil && *r.Status.Complete
		})
	require.NoError(t, err)

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, wire.RegisterCluster(reg, c, metrics.Options{}))
	text := gatherAll(t, reg)
	for _, want := range []string{
		`kubevirt_vmsnapshot_succeeded_timestamp_seconds{name="db",namespace="default",snapshot_name="snap"}`,
		`kubevirt_vmsnapshot_info{name="snap",namespace="default",phase="succeeded",ready_to_use="true",`,
		`kubevirt_vmsnapshot_create_date_timestamp_seconds{name="snap",namespace="default"}`,
		`kubevirt_vmrestore_info{complete="true",failure="false",name="back",namespace="default",snapshot_name="snap",`,
		`kubevirt_vmsnapshot_disks_restored_from_source{vm_name="db",vm_namespace="default"} 1`,
		`kubevirt_vmsnapshot_disks_restored_from_source_bytes{vm_name="db",vm_namespace="default"} 4.194304e+06`,
		`kubevirt_vmsnapshot_persistentvolumeclaim_labels{`,
	} {
		assert.Contains(t, text, want)
	}
	promcheck.RequireClean(t, []byte(text))
}
