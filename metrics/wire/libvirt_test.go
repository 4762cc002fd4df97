//go:build libvirt && cgo

package wire_test

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/internal/promcheck"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/metrics/wire"
	"github.com/virtkit/virtkit/store"
)

// TestClusterOnLibvirtTestDriverServesKubeVirtFamilies runs a control
// plane whose node agent drives libvirt's in-process test driver and
// checks the node side's families come from libvirt with KubeVirt's types
// and labels. The test driver reports no CPU, memory, network or block
// statistics (only state), so those families are absent here; the vCPU
// pinning is libvirt's own answer.
func TestClusterOnLibvirtTestDriverServesKubeVirtFamilies(t *testing.T) {
	st, err := metrics.InstrumentStore(store.NewMemory(), "memory")
	require.NoError(t, err)
	// No memory hot-plug room: KubeVirt's domain XML for it (<memory> the
	// boot memory, beside a virtio-mem device) relies on the QEMU driver
	// recomputing the total from the NUMA cells, which the test driver
	// does not do; it refuses the definition.
	c, err := cluster.New(cluster.Options{Nodes: 1, Store: st, Defaults: virtkit.DefaultOptions{NoHotplug: true},
		NewHypervisor: func(string) (hypervisor.Hypervisor, error) {
			h, err := libvirt.New(context.Background(), libvirt.Options{URI: "test:///default"})
			if err == nil {
				t.Cleanup(func() { _ = h.Close() })
			}
			return h, err
		}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	objs, err := virtkit.Decode(strings.NewReader(testManifests))
	require.NoError(t, err)
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	require.NoError(t, c.Apply(wctx, objs...))
	_, err = c.WaitForVMI(wctx, "default", "web", func(vmi *virtkit.VirtualMachineInstance, found bool) bool {
		return found && vmi.Status.Phase == virtkit.Running
	})
	require.NoError(t, err)

	h, err := wire.StartClusterHandler(ctx, c, metrics.Options{})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	var body []byte
	// The node agent reports ready once its watch has listed.
	require.Eventually(t, func() bool {
		body = scrape(t, srv.URL)
		return strings.Contains(string(body), `kubevirt_virt_handler_ready_status{node="node-1"} 1`)
	}, 10*time.Second, 50*time.Millisecond)

	f, err := os.Open("../testdata/kubevirt-metrics.txt")
	require.NoError(t, err)
	defer f.Close()
	want, err := promcheck.ParseFamilies(f)
	require.NoError(t, err)
	r := promcheck.Compare(want, body, map[string][]string{"kubevirt_virt_handler_ready_status": {"node"}})
	t.Logf("serves %d of KubeVirt's %d families on libvirt's test driver; missing: %v", len(r.Served), len(want), r.Missing)
	assert.Empty(t, r.Mismatched)
	for _, fam := range []string{
		"kubevirt_vmi_node_cpu_affinity",
		"kubevirt_configuration_emulation_enabled", "kubevirt_virt_handler_ready_status", "kubevirt_virt_controller_ready_status",
		"kubevirt_virt_api_ready_status", "kubevirt_rest_client_requests_total", "kubevirt_vmi_info", "kubevirt_vm_resource_requests",
	} {
		assert.Contains(t, r.Served, fam)
	}
	// The host's memory, from the test driver's node info and free memory.
	for _, series := range []string{`virtkit_node_memory_total_bytes{node="node-1"}`, `virtkit_node_memory_free_bytes{node="node-1"}`} {
		assert.Contains(t, string(body), series)
	}
	promcheck.RequireClean(t, body)
}
