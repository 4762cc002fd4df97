//go:build prometheus

package prometheus

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/internal/proctest"
	"github.com/virtkit/virtkit/internal/testenv"
)

const (
	rulesFile  = "../../examples/prometheus/virtkit-rules.yaml"
	dashboards = "../../examples/grafana/*.json"
	// rateInterval replaces Grafana's $__rate_interval: ten scrapes,
	// plenty for rate() on a loaded machine.
	rateInterval = "20s"
	// alertFor replaces every alert's `for` so a test sees it fire; longer
	// than one scrape interval, so one slow scrape fires nothing.
	alertFor = 5 * time.Second
	// demoNodes is the demo's number of simulated hosts.
	demoNodes = 2
)

// waitFor polls cond every 500ms until it returns true, the process p
// exits (when p is not nil) or timeout passes; it fails the test then.
func waitFor(t *testing.T, what string, timeout time.Duration, p *process, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if p != nil && p.exited() {
			t.Fatalf("waiting for %s: the process exited: %v", what, p.err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not after %v", what, timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestPrometheusScrapesVirtkit starts Prometheus with virtkit's rules and
// the demo control plane as its one target; every dashboard query must
// return data, and stopping the control plane must fire VirtControllerDown.
func TestPrometheusScrapesVirtkit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus and a virtkit process; skipped with -short")
	}
	promBin := testenv.LookTool(t, "prometheus", "Debian prometheus")
	bin, cleanup, err := proctest.BuildVirtkit("virtkit-prometheus-bin-")
	require.NoError(t, err)
	t.Cleanup(cleanup)

	ctx := context.Background()
	dir := t.TempDir()
	demoAddr, promAddr := freeAddr(t), freeAddr(t)
	config := writeConfig(t, dir, rulesFile, demoAddr, alertFor)
	queries := dashboardQueries(t, dashboards, rateInterval)
	require.NotEmpty(t, queries)

	// Prometheus first, so it scrapes the demo's walk as it happens.
	prom := start(t, "prometheus", promBin,
		"--config.file="+config,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr,
		"--log.level=warn")
	a := &api{base: "http://" + promAddr, client: &http.Client{Timeout: 30 * time.Second}}
	waitFor(t, "Prometheus to be ready", time.Minute, prom, func() bool { return a.ready(ctx) })

	walkStart := time.Now()
	demo := start(t, "virtkit demo", bin, "demo", "--nodes", strconv.Itoa(demoNodes),
		"--metrics-addr", demoAddr, "--hold", "--timeout", "4m")
	waitFor(t, "the demo's walk", 5*time.Minute, demo, func() bool {
		return strings.Contains(demo.out.String(), "holding: serving metrics")
	})
	held := time.Now()

	// The recording rules see the control plane up, and enough scrapes
	// after the walk for every rate() window.
	waitFor(t, "the control plane to be up in Prometheus", time.Minute, prom, func() bool {
		v, err := a.scalar(ctx, "kubevirt_virt_controller_up")
		return err == nil && v == 1
	})
	waitFor(t, "scrapes after the walk", time.Minute, prom, func() bool {
		v, err := a.scalar(ctx, `count_over_time(up{job="virtkit-controller"}[`+rateInterval+`])`)
		return err == nil && v >= 5 && time.Since(held) > 10*time.Second
	})

	// Every dashboard query returns data: somewhere during the run (what
	// the panel shows over the run) and now, after the walk.
	var never, notNow []string
	for _, q := range queries {
		during, err := a.queryRange(ctx, q.expr, walkStart, time.Now(), time.Second)
		if !assert.NoError(t, err, q.String()) {
			continue
		}
		now, err := a.query(ctx, q.expr)
		if !assert.NoError(t, err, q.String()) {
			continue
		}
		switch {
		case len(during) == 0:
			never = append(never, q.String())
		case len(now) == 0:
			notNow = append(notNow, q.String())
		}
	}
	t.Logf("%d dashboard queries checked", len(queries))
	if len(never) > 0 {
		t.Errorf("%d of %d dashboard queries returned no data during the whole run:\n\t%s",
			len(never), len(queries), strings.Join(never, "\n\t"))
	}
	if len(notNow) > 0 {
		t.Errorf("%d of %d dashboard queries returned data during the walk but none after it:\n\t%s",
			len(notNow), len(queries), strings.Join(notNow, "\n\t"))
	}

	// Every series the rules read is served (the readiness and leadership
	// gauges, kubevirt_vm_info, kubevirt_vmi_number_of_outdated, the node
	// memory, ...), but the host page-cache figures: libvirt reports them,
	// the demo's simulated hosts model no page cache.
	var missing []string
	inputs := ruleInputs(t, rulesFile)
	for _, name := range inputs {
		if name == "virtkit_node_memory_buffers_bytes" || name == "virtkit_node_memory_cached_bytes" {
			continue
		}
		res, err := a.queryRange(ctx, name, walkStart, time.Now(), time.Second)
		if assert.NoError(t, err, name) && len(res) == 0 {
			missing = append(missing, name)
		}
	}
	t.Logf("%d metrics read by the rules checked", len(inputs))
	if len(missing) > 0 {
		t.Errorf("metrics the rules read that the control plane did not serve during the run: %s", strings.Join(missing, ", "))
	}

	// A healthy control plane: one process, ready and leading; no alert
	// about it has fired (one slow scrape may make one pending).
	// Each simulated host's memory is served, and it is not short of it.
	for expr, want := range map[string]float64{
		"count(virtkit_node_memory_total_bytes)":                 demoNodes,
		"count(node:virtkit_node_memory_available:ratio > 0.05)": demoNodes,
	} {
		v, err := a.scalar(ctx, expr)
		if assert.NoError(t, err, expr) {
			assert.Equal(t, want, v, expr)
		}
	}
	for expr, want := range map[string]float64{
		"kubevirt_virt_controller_ready":   1,
		"kubevirt_virt_controller_leading": 1,
		"kubevirt_virt_handler_ready":      demoNodes,
		"kubevirt_allocatable_nodes":       demoNodes,
		"kubevirt_nodes_with_kvm":          demoNodes,
	} {
		v, err := a.scalar(ctx, expr)
		if assert.NoError(t, err, expr) {
			assert.Equal(t, want, v, expr)
		}
	}
	for _, name := range []string{"VirtControllerDown", "NoReadyVirtController", "LowReadyVirtControllersCount",
		"VirtkitNoLeadingController", "NoReadyVirtHandler", "LowReadyVirtHandlerCount", "LowKVMNodesCount", "VirtkitNodeLowFreeMemory"} {
		state, err := a.alertState(ctx, name)
		if assert.NoError(t, err, name) {
			assert.NotEqual(t, "firing", state, "%s while the control plane runs", name)
		}
	}

	// Stop the control plane: Prometheus's scrapes fail, the recording
	// rule drops to 0 and VirtControllerDown fires once its (shortened)
	// `for` has passed.
	demo.stop(30 * time.Second)
	stopped := time.Now()
	waitFor(t, "VirtControllerDown to fire", time.Minute, prom, func() bool {
		state, err := a.alertState(ctx, "VirtControllerDown")
		return err == nil && state == "firing"
	})
	t.Logf("VirtControllerDown fired %v after the control plane stopped", time.Since(stopped).Round(100*time.Millisecond))
	v, err := a.scalar(ctx, "kubevirt_virt_controller_up")
	require.NoError(t, err)
	assert.Zero(t, v, "kubevirt_virt_controller_up after the stop")
	if _, err := os.Stat(filepath.Join(dir, "data")); err != nil {
		t.Errorf("Prometheus's storage in the temporary directory: %v", err)
	}
}
