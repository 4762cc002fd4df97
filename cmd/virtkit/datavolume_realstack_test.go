//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/store"
)

const dvRealManifest = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: dvboot
  namespace: dvreal
spec:
  runStrategy: Always
  dataVolumeTemplates:
  - metadata:
      name: dvboot-data
    spec:
      source:
        http:
          url: %s
      storage:
        resources:
          requests:
            storage: 16Mi
  template:
    spec:
      domain:
        memory:
          guest: 128Mi
        firmware:
          kernelBoot:
            kernelArgs: console=ttyS0 quiet panic=-1
            container:
              image: localhost/virtkit/tiny-guest:latest
              kernelPath: /boot/vmlinuz
              initrdPath: /boot/initramfs.gz
        devices:
          disks:
          - name: data
            disk: {bus: virtio}
      volumes:
      - name: data
        dataVolume:
          name: dvboot-data
      terminationGracePeriodSeconds: 5
`

// TestRealStackDataVolumeDisk imports a qcow2 over HTTP from a loopback
// server into a DataVolume on a real libvirtd node and runs the tiny guest
// on real QEMU with the imported disk attached: the live domain XML names
// the DataVolume's raw file.
func TestRealStackDataVolumeDisk(t *testing.T) {
	libvirttest.RequireStack(t)
	src := t.TempDir()
	testenv.DiskFixture(t, src, "data", 8<<20, 4<<20, "virtkit-dv-marker")
	srv := httptest.NewServer(http.FileServer(http.Dir(src)))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	copts, cleanup, err := libvirtDemoOptions(ctx, demoOptions{nodes: 1, hypervisor: "libvirt"}, cluster.Options{Nodes: 1})
	require.NoError(t, err)
	defer cleanup()
	copts.Storage.AllowedNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} // the test's server is on loopback
	c, err := cluster.New(copts)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { _ = c.Start(ctx); close(done) }()

	objs, err := virtkit.DecodeBytes(fmt.Appendf(nil, dvRealManifest, srv.URL+"/data.qcow2"))
	require.NoError(t, err)
	require.NoError(t, c.Apply(ctx, objs...))
	defer func() {
		// Stop the guest we started before the cluster goes away.
		vm := &virtkit.VirtualMachine{}
		if c.Store().Get(context.Background(), store.Key{Namespace: "dvreal", Name: "dvboot"}, vm) == nil {
			_ = c.Store().Delete(context.Background(), vm, store.DeleteOptions{})
		}
		wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
		defer wcancel()
		_, _ = c.WaitForVMI(wctx, "dvreal", "dvboot", cluster.Gone[*virtkit.VirtualMachineInstance]())
		cancel()
		<-done
	}()

	vmi, err := c.WaitForVMI(ctx, "dvreal", "dvboot", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err)
	dv := &virtkit.DataVolume{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "dvreal", Name: "dvboot-data"}, dv))
	require.Equal(t, virtkit.DataVolumeSucceeded, dv.Status.Phase)
	xml, err := c.Node(vmi.Status.NodeName).Hypervisor.XML(ctx, domain.DomainName(vmi))
	require.NoError(t, err)
	require.Contains(t, xml, filepath.Join("dv", "dvreal", "dvboot-data.img"), "the guest's disk is the DataVolume's file")
	require.True(t, strings.Contains(xml, `type="raw"`) || strings.Contains(xml, `type='raw'`), "imported as raw")
}
