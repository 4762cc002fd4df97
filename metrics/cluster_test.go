package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/metrics"
)

const testManifests = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: web
  namespace: default
  labels:
    app: web
spec:
  runStrategy: Always
  template:
    metadata:
      labels:
        kubevirt.io/vm: web
        app.kubernetes.io/part-of: shop
    spec:
      domain:
        cpu:
          cores: 2
        memory:
          guest: 1Gi
        devices:
          disks:
          - name: containerdisk
            disk:
              bus: virtio
          interfaces:
          - name: default
            masquerade: {}
      networks:
      - name: default
        pod: {}
      evictionStrategy: LiveMigrate
      volumes:
      - name: containerdisk
        containerDisk:
          image: quay.io/containerdisks/fedora:latest
`

// startCluster runs an embedded control plane on simulated hosts with one
// running VM whose guest agent has reported, and returns it with a
// registry holding its metrics.
func startCluster(t *testing.T) (*cluster.Cluster, *prometheus.Registry) {
	t.Helper()
	c, err := cluster.New(cluster.Options{Nodes: 2})
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
		return found && vmi.Status.Phase == virtkit.Running && vmi.Status.GuestOSInfo.Name != ""
	})
	require.NoError(t, err)

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, metrics.RegisterCluster(reg, c, metrics.Options{}))
	return c, reg
}

func scrape(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return body
}

func TestRegisterClusterExpositionPassesPromtool(t *testing.T) {
	_, reg := startCluster(t)
	srv := httptest.NewServer(metrics.Handler(reg))
	defer srv.Close()

	body := scrape(t, srv.URL)
	for _, want := range []string{
		`kubevirt_vmi_cpu_usage_seconds_total{kubernetes_vmi_label_app_kubernetes_io_part_of="shop",`,
		`kubevirt_vmi_memory_domain_bytes{`,
		`kubevirt_vmi_network_receive_bytes_total{interface="default",`,
		`kubevirt_vmi_storage_read_traffic_bytes_total{drive="containerdisk",`,
		`kubevirt_vmi_filesystem_capacity_bytes{`,
		`kubevirt_vmi_info{evictable="true"`,
		`phase="running"`,
		`kubevirt_vm_info{`,
		`status="Running",status_group="running"`,
		`kubevirt_vmi_phase_transition_time_seconds_bucket{`,
		`kubevirt_workqueue_depth{name="virtualmachine"}`,
		`kubevirt_workqueue_depth{name="node/node-1"}`,
		`virtkit_controller_reconcile_time_seconds_count{controller="virtualmachineinstance"}`,
		`virtkit_scrape_domain_timeouts_total{node="node-2"} 0`,
	} {
		assert.True(t, strings.Contains(string(body), want), "exposition lacks %s", want)
	}
	metrics.PromtoolCheck(t, body)
}

func TestClusterCPUTimeGrows(t *testing.T) {
	_, reg := startCluster(t)
	cpu := func() float64 {
		t.Helper()
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() == "kubevirt_vmi_cpu_usage_seconds_total" {
				require.Len(t, mf.GetMetric(), 1)
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		t.Fatal("no kubevirt_vmi_cpu_usage_seconds_total")
		return 0
	}
	first := cpu()
	require.Eventually(t, func() bool { return cpu() > first }, 10*time.Second, 20*time.Millisecond)
}

func TestRegisterClusterErrors(t *testing.T) {
	c, err := cluster.New(cluster.Options{Nodes: 1})
	require.NoError(t, err)
	require.ErrorIs(t, metrics.RegisterCluster(nil, c, metrics.Options{}), metrics.ErrInvalidOptions)
	require.ErrorIs(t, metrics.RegisterCluster(prometheus.NewRegistry(), nil, metrics.Options{}), metrics.ErrInvalidOptions)
	require.ErrorIs(t, metrics.RegisterCluster(prometheus.NewRegistry(), c, metrics.Options{ScrapeTimeout: -time.Second}), metrics.ErrInvalidOptions)
}
