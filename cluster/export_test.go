package cluster_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

const exportSimVM = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: xvm
spec:
  runStrategy: Always
  dataVolumeTemplates:
  - metadata: {name: xvm-root}
    spec:
      source: {blank: {}}
      storage: {resources: {requests: {storage: 4Mi}}}
  template:
    spec:
      domain:
        devices:
          disks: [{name: root, disk: {bus: virtio}}]
        resources: {requests: {memory: 64Mi}}
      volumes: [{name: root, dataVolume: {name: xvm-root}}]
`

// TestExportSimulatedGuestWrites exports what a simulated guest wrote to
// its DataVolume disk: a snapshot of the running VM exports at once, the
// VM itself only once it is stopped, and both downloads hold the guest's
// write.
func TestExportSimulatedGuestWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := cluster.New(cluster.Options{Storage: cluster.StorageOptions{Dir: t.TempDir()}})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	defer func() { cancel(); <-done }()
	objs, err := virtkit.DecodeBytes([]byte(exportSimVM))
	require.NoError(t, err)
	require.NoError(t, c.Apply(ctx, objs...))

	vmi, err := c.WaitForVMI(ctx, "default", "xvm", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err)
	host, ok := c.Node(vmi.Status.NodeName).Hypervisor.(*sim.Host)
	require.True(t, ok, "the embedded default is the simulator")
	marker := []byte("written by the simulated guest")
	require.NoError(t, host.WriteDisk(ctx, node.DomainName("default", "xvm"), "vda", 1<<20, marker))

	group, snapGroup := virtkit.GroupName, virtkit.SnapshotGroupName
	snap := &virtkit.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "xsnap", Namespace: "default"},
		Spec: virtkit.VirtualMachineSnapshotSpec{Source: virtkit.TypedLocalObjectReference{APIGroup: &group, Kind: virtkit.KindVirtualMachine, Name: "xvm"}}}
	vmExp := &virtkit.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Name: "xvm-export", Namespace: "default"},
		Spec: virtkit.VirtualMachineExportSpec{Source: virtkit.TypedLocalObjectReference{APIGroup: &group, Kind: virtkit.KindVirtualMachine, Name: "xvm"}}}
	snapExp := &virtkit.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Name: "xsnap-export", Namespace: "default"},
		Spec: virtkit.VirtualMachineExportSpec{Source: virtkit.TypedLocalObjectReference{APIGroup: &snapGroup, Kind: virtkit.KindVirtualMachineSnapshot, Name: "xsnap"}}}
	require.NoError(t, c.Apply(ctx, snap, vmExp, snapExp))

	waitExport := func(name string, cond func(*virtkit.VirtualMachineExport) bool) *virtkit.VirtualMachineExport {
		e, err := cluster.WaitFor(ctx, c.Store(), store.Key{Namespace: "default", Name: name},
			func() *virtkit.VirtualMachineExport { return &virtkit.VirtualMachineExport{} }, &virtkit.VirtualMachineExportList{},
			func(e *virtkit.VirtualMachineExport, found bool) bool { return found && e.Status != nil && cond(e) })
		require.NoError(t, err, "export %s", name)
		return e
	}
	ready := func(e *virtkit.VirtualMachineExport) bool { return e.Status.Phase == virtkit.ExportReady }
	download := func(e *virtkit.VirtualMachineExport, volume string) []byte {
		sec := &corev1.Secret{}
		require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: *e.Status.TokenSecretRef}, sec))
		l := e.Status.Links.Internal
		pool := x509.NewCertPool()
		require.True(t, pool.AppendCertsFromPEM([]byte(l.Cert)))
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		var url string
		for _, v := range l.Volumes {
			if v.Name == volume {
				url = v.Formats[0].URL
			}
		}
		require.NotEmpty(t, url, "volume %s in %+v", volume, l.Volumes)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Header.Set(virtkit.ExportTokenHeader, string(sec.Data[virtkit.ExportTokenKey]))
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return b
	}

	// The VM runs: its export waits, its snapshot's does not.
	pending := waitExport("xvm-export", func(e *virtkit.VirtualMachineExport) bool { return e.Status.Phase == virtkit.ExportPending })
	assert.Nil(t, pending.Status.Links)
	se := waitExport("xsnap-export", ready)
	b := download(se, "xvm-root")
	require.Len(t, b, 4<<20)
	assert.Equal(t, marker, b[1<<20:1<<20+len(marker)], "the snapshot holds the guest's write")

	// Stop the VM: its export becomes ready and serves the disk.
	for {
		vm := &virtkit.VirtualMachine{}
		require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: "xvm"}, vm))
		halted := virtkit.RunStrategyHalted
		vm.Spec.RunStrategy = &halted
		if err := c.Store().Update(ctx, vm); !errors.Is(err, store.ErrConflict) {
			require.NoError(t, err)
			break
		}
	}
	ve := waitExport("xvm-export", ready)
	b = download(ve, "xvm-root")
	assert.True(t, bytes.Equal(marker, b[1<<20:1<<20+len(marker)]), "the VM's export holds the guest's write")
	assert.Equal(t, "xvm", *ve.Status.VirtualMachineName)
}
