package cluster_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi/oci/ocitest"
	"github.com/virtkit/virtkit/cluster"
)

const containerDiskVM = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: %s
spec:
  runStrategy: Always
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
        containerDisk:
          image: %s
          imagePullPolicy: IfNotPresent
`

// With PullContainerDisks the nodes pull containerDisks from their
// registry: a pushed image boots; a missing one leaves the VMI Scheduled
// with Synchronized=False ErrImagePull and the VM printable status
// ErrImagePull, then ImagePullBackOff, as KubeVirt shows a failed
// virt-launcher pull.
func TestContainerDiskPulledFromRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := ocitest.ContainerDisk(map[string][]byte{"disk/disk.img": make([]byte, 1<<20)})
	require.NoError(t, err)
	require.NoError(t, ocitest.Push(host+"/vm/disk:v1", img, nil))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := cluster.New(cluster.Options{Storage: cluster.StorageOptions{Dir: t.TempDir(), PullContainerDisks: true,
		AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}})
	require.NoError(t, err)
	go func() { _ = c.Start(ctx) }()

	objs, err := virtkit.DecodeBytes(fmt.Appendf(nil, containerDiskVM, "good", host+"/vm/disk:v1"))
	require.NoError(t, err)
	require.NoError(t, c.Apply(ctx, objs...))
	_, err = c.WaitForVMI(ctx, "default", "good", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err)

	objs, err = virtkit.DecodeBytes(fmt.Appendf(nil, containerDiskVM, "bad", host+"/vm/missing:v1"))
	require.NoError(t, err)
	require.NoError(t, c.Apply(ctx, objs...))
	vmi, err := c.WaitForVMI(ctx, "default", "bad", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && virtkit.HasCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceSynchronized, virtkit.ConditionFalse, virtkit.ErrImagePullReason)
	})
	require.NoError(t, err)
	assert.Equal(t, virtkit.Scheduled, vmi.Status.Phase, "a failed pull does not fail the VMI")
	assert.Contains(t, virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceSynchronized).Message, "missing")
	_, err = c.WaitForVM(ctx, "default", "bad", cluster.VMPrintableStatusIs(virtkit.VirtualMachineStatusErrImagePull))
	require.NoError(t, err)
	// The retry (after the kubelet's 10 s back-off) fails again: ImagePullBackOff.
	_, err = c.WaitForVM(ctx, "default", "bad", cluster.VMPrintableStatusIs(virtkit.VirtualMachineStatusImagePullBackOff))
	require.NoError(t, err)
}
