package wire_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/internal/promcheck"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/metrics/wire"
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
	// The guest agent reports filesystems on their own poll.
	vmi, err := c.WaitForVMI(wctx, "default", "web", func(_ *virtkit.VirtualMachineInstance, found bool) bool { return found })
	require.NoError(t, err)
	agent := c.Node(vmi.Status.NodeName).Agent
	require.Eventually(t, func() bool {
		fs, err := agent.FilesystemList("default", "web")
		return err == nil && len(fs) > 0
	}, 30*time.Second, 10*time.Millisecond, "the guest agent never reported filesystems")

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, wire.RegisterCluster(reg, c, metrics.Options{}))
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
	promcheck.RequireClean(t, body)
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
	require.ErrorIs(t, wire.RegisterCluster(nil, c, metrics.Options{}), virtkit.ErrInvalidOptions)
	require.ErrorIs(t, wire.RegisterCluster(prometheus.NewRegistry(), nil, metrics.Options{}), virtkit.ErrInvalidOptions)
	require.ErrorIs(t, wire.RegisterCluster(prometheus.NewRegistry(), c, metrics.Options{ScrapeTimeout: -time.Second}), virtkit.ErrInvalidOptions)
}

// TestPerNodeEndpoints exports the same cluster the KubeVirt way: one
// endpoint per node agent and one for the control plane.
func TestPerNodeEndpoints(t *testing.T) {
	c, _ := startCluster(t)
	vmi, err := c.WaitForVMI(context.Background(), "default", "web", func(_ *virtkit.VirtualMachineInstance, found bool) bool { return found })
	require.NoError(t, err)

	cp := prometheus.NewPedanticRegistry()
	require.NoError(t, wire.RegisterControlPlane(cp, c.Store(), c.Controllers(), metrics.Options{}))
	cpText := gatherAll(t, cp)
	assert.Contains(t, cpText, `kubevirt_vmi_info{`)
	assert.Contains(t, cpText, `kubevirt_workqueue_depth{name="virtualmachine"}`)
	assert.NotContains(t, cpText, `kubevirt_vmi_cpu_usage_seconds_total`)
	promcheck.RequireClean(t, []byte(cpText))

	for _, n := range c.Nodes() {
		reg := prometheus.NewPedanticRegistry()
		require.NoError(t, wire.RegisterNode(reg, c.Store(), n.Agent, n.Hypervisor, metrics.Options{}))
		text := gatherAll(t, reg)
		assert.Contains(t, text, `kubevirt_workqueue_depth{name="node/`+n.Name+`"}`)
		assert.NotContains(t, text, `kubevirt_vmi_info{`, "cluster-wide series belong to the control plane")
		if n.Name == vmi.Status.NodeName {
			assert.Contains(t, text, `kubevirt_vmi_cpu_usage_seconds_total{`)
		} else {
			assert.NotContains(t, text, `kubevirt_vmi_cpu_usage_seconds_total{`)
		}
		promcheck.RequireClean(t, []byte(text))
	}

	n := c.Nodes()[0]
	require.ErrorIs(t, wire.RegisterNode(nil, c.Store(), n.Agent, n.Hypervisor, metrics.Options{}), virtkit.ErrInvalidOptions)
	require.ErrorIs(t, wire.RegisterNode(prometheus.NewRegistry(), c.Store(), nil, n.Hypervisor, metrics.Options{}), virtkit.ErrInvalidOptions)
	require.ErrorIs(t, wire.RegisterNode(prometheus.NewRegistry(), nil, n.Agent, n.Hypervisor, metrics.Options{}), virtkit.ErrInvalidOptions)
	require.ErrorIs(t, wire.RegisterControlPlane(prometheus.NewRegistry(), nil, nil, metrics.Options{}), virtkit.ErrInvalidOptions)
	// Unchecked collectors are not deduplicated at registration: the same
	// sources registered twice show up as duplicate series at Gather.
	reg := prometheus.NewRegistry()
	require.NoError(t, wire.RegisterControlPlane(reg, c.Store(), c.Controllers(), metrics.Options{}))
	require.NoError(t, wire.RegisterControlPlane(reg, c.Store(), c.Controllers(), metrics.Options{}))
	_, err = reg.Gather()
	require.ErrorContains(t, err, "was collected before with the same name and label values")
}

func gatherAll(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	var b strings.Builder
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		require.NoError(t, enc.Encode(mf))
	}
	return b.String()
}

func TestHandlerWithoutGatherer(t *testing.T) {
	rec := httptest.NewRecorder()
	metrics.Handler(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.Contains(t, rec.Body.String(), "nil Gatherer")
}

// ClusterHandler streams the domain families and serves the same series
// (by name and labels) as RegisterCluster's registry, promtool-clean.
func TestClusterHandlerServesTheSameSeries(t *testing.T) {
	c, reg := startCluster(t)
	h, err := wire.ClusterHandler(c, metrics.Options{})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := scrape(t, srv.URL)
	promcheck.RequireClean(t, body)

	// Values move between scrapes (CPU time, queue durations): compare
	// series identities.
	ids := func(text string) []string {
		var out []string
		for _, l := range strings.Split(text, "\n") {
			if l == "" || strings.HasPrefix(l, "#") || strings.Contains(l, "_bucket{") || strings.HasPrefix(l, "kubevirt_workqueue") {
				continue
			}
			series := l[:strings.LastIndexByte(l, ' ')]
			if i := strings.IndexByte(series, '{'); i >= 0 {
				labels := strings.Split(strings.TrimSuffix(series[i+1:], "}"), ",")
				slices.Sort(labels)
				series = series[:i] + "{" + strings.Join(labels, ",") + "}"
			}
			out = append(out, series)
		}
		slices.Sort(out)
		return out
	}
	assert.Equal(t, ids(gatherAll(t, reg)), ids(string(body)))
	_, err = wire.ClusterHandler(nil, metrics.Options{})
	require.ErrorIs(t, err, virtkit.ErrInvalidOptions)
}
