//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package main

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
	"github.com/virtkit/virtkit/network"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// realAPIClusterOptions describe a one-node cluster on the real libvirtd.
type realAPIClusterOptions struct {
	Node       string // the node's name
	WorkPrefix string // libvirttest.QEMUWorkDir's prefix
	// Images and Kernels are the volume resolver's image files and direct
	// kernel boots by image name.
	Images  map[string]string
	Kernels map[string]domain.HostKernel
	// PodRange, PodBridge and PodTable, when PodRange is valid, give the
	// cluster a pod network on a host bridge with its own nft table.
	PodRange  netip.Prefix
	PodBridge string
	PodTable  string
}

// realAPICluster is a one-node cluster on the real libvirtd (qemu:///system)
// with `virtkit controller`'s API server in front of it; everything is
// stopped at the test's cleanup.
type realAPICluster struct {
	C          *cluster.Cluster
	HV         *libvirt.Hypervisor
	Kubeconfig string
	// Ctx ends when the cluster is stopped.
	Ctx context.Context
}

func startRealAPICluster(t *testing.T, o realAPIClusterOptions) *realAPICluster {
	t.Helper()
	work, uid, gid := libvirttest.QEMUWorkDir(t, o.WorkPrefix)
	dopts := domain.Options{
		Type:       domain.TypeQEMU,
		RuntimeDir: filepath.Join(work, "run"),
		VolumeResolver: &domain.DirResolver{Dir: filepath.Join(work, "volumes"), Create: true,
			Images: o.Images, Kernels: o.Kernels},
	}
	require.NoError(t, os.MkdirAll(dopts.RuntimeDir, 0o755))
	var host *network.Host
	var pod *cluster.PodNetwork
	if o.PodRange.IsValid() {
		host = network.NewHost(network.HostOptions{StateDir: filepath.Join(work, "net"), Table: o.PodTable})
		pod = &cluster.PodNetwork{Range: o.PodRange, NodePrefix: 24, Bridge: o.PodBridge,
			Host: func(string) network.HostNetworker { return host }}
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc := &realAPICluster{Ctx: ctx}
	c, err := cluster.New(cluster.Options{
		NodeNames: []string{o.Node},
		NewHypervisor: func(string) (hypervisor.Hypervisor, error) {
			h, err := libvirt.New(ctx, libvirt.Options{URI: libvirttest.SourceURI})
			rc.HV = h
			return h, err
		},
		Domain:     dopts,
		PodNetwork: pod,
		NodeAgent: node.Options{
			RuntimeDirOwner: &node.Owner{UID: uid, GID: gid}, StatusInterval: time.Second, HeartbeatInterval: 2 * time.Second,
		},
	})
	if err != nil {
		cancel()
		require.NoError(t, err)
	}
	rc.C = c
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	dir := t.TempDir()
	rc.Kubeconfig = filepath.Join(dir, "kubeconfig")
	api := &apiFlags{addr: "127.0.0.1:0", certDir: filepath.Join(dir, "pki"), kubeconfig: rc.Kubeconfig}
	stopAPI, err := api.start(ctx, c.Store(), virtkit.DefaultOptions{}, nil, c.Nodes(), slog.New(slog.DiscardHandler), io.Discard)
	if err != nil {
		cancel()
		<-done
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		stopAPI()
		cancel()
		require.NoError(t, <-done)
		if host != nil {
			dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
			defer dcancel()
			assert.NoError(t, host.Close(dctx))
		}
		if rc.HV != nil {
			_ = rc.HV.Close()
		}
	})
	return rc
}

// deleteAtCleanup deletes vmi at the test's cleanup, before the cluster
// stops (cleanups run last registered first), and waits until it is gone.
func (rc *realAPICluster) deleteAtCleanup(t *testing.T, vmi *virtkit.VirtualMachineInstance) {
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer dcancel()
		_ = rc.C.Store().Delete(dctx, vmi, store.DeleteOptions{})
		if _, err := rc.C.WaitForVMI(dctx, vmi.Namespace, vmi.Name, cluster.Gone[*virtkit.VirtualMachineInstance]()); err != nil {
			t.Logf("VMI not gone: %v", err)
		}
	})
}
