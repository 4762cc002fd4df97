package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/internal/proctest"
	"github.com/virtkit/virtkit/internal/promcheck"
)

var metricsURL = regexp.MustCompile(`metrics: (http://\S+/metrics)`)

// TestDemoServesMetricsThatPassPromtool runs the demo in-process with
// --metrics-addr and --hold and scrapes /metrics during and after the
// walk, as a user would. The scrape after the walk must serve at least
// minKubeVirtFamilies of KubeVirt's metric families (the vendored list in
// metrics/testdata) with KubeVirt's types and label names, and both
// scrapes must pass promtool (KubeVirt's own names aside, see
// internal/promcheck).
func TestDemoServesMetricsThatPassPromtool(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut proctest.Output
	done := make(chan error, 1)
	go func() {
		done <- runDemo(ctx, &out, &errOut, demoOptions{nodes: 2, hypervisor: "sim", output: "text",
			timeout: 2 * time.Minute, metricsAddr: "127.0.0.1:0", hold: true})
	}()
	// Scrape throughout the walk, keeping one scrape taken while the live
	// migration ran (the walk's step 8): it must carry the job's and the
	// engine's series.
	var m []string
	var midMigration []byte
	require.Eventually(t, func() bool {
		if m == nil {
			m = metricsURL.FindStringSubmatch(out.String())
		}
		if m != nil && midMigration == nil {
			if body, err := httpGetBody(m[1]); err == nil && bytes.Contains(body, []byte("kubevirt_vmi_migration_data_remaining_bytes{")) {
				midMigration = body
			}
		}
		return strings.Contains(out.String(), "holding: serving metrics")
	}, 2*time.Minute, 10*time.Millisecond, "the demo walk did not finish: %s\n%s", out.String(), errOut.String())
	require.NotNil(t, m, "no metrics URL printed: %s", out.String())
	require.NotNil(t, midMigration, "no scrape caught the live migration")
	for _, want := range []string{"kubevirt_vmi_migration_data_bytes_total{", "kubevirt_vmi_migration_start_time_seconds{",
		"virtkit_migration_strategy_info{", "virtkit_migration_decisions_total{"} {
		assert.True(t, bytes.Contains(midMigration, []byte(want)), "mid-migration scrape lacks %s", want)
	}

	resp, err := http.Get(m[1])
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, want := range []string{"kubevirt_vmi_info{", "kubevirt_vmi_cpu_usage_seconds_total{", "kubevirt_vm_info{", "kubevirt_workqueue_depth{",
		`virtkit_node_memory_total_bytes{node="node-1"}`, `virtkit_node_memory_free_bytes{node="node-1"}`} {
		assert.Contains(t, string(body), want)
	}
	t.Run("KubeVirt families after the walk", func(t *testing.T) { checkKubeVirtFamilies(t, body) })
	t.Run("every dashboard metric after the walk", func(t *testing.T) { checkDashboardMetrics(t, body) })
	t.Run("promtool", func(t *testing.T) {
		promcheck.RequireClean(t, midMigration)
		promcheck.RequireClean(t, body)
	})

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, errOut.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the demo did not stop after its context was cancelled")
	}
	// The server is gone with the demo.
	_, err = http.Get(m[1])
	assert.Error(t, err)
}

// minKubeVirtFamilies is how many of KubeVirt's metric families one
// scrape after the demo's walk must serve.
const minKubeVirtFamilies = 85

// virtkitExtraLabels are labels virtkit adds to KubeVirt's families (see
// docs/metrics.md): one endpoint may serve several node agents.
var virtkitExtraLabels = map[string][]string{"kubevirt_virt_handler_ready_status": {"node"}}

// checkKubeVirtFamilies counts the KubeVirt families exposition serves
// with KubeVirt's type and labels, and fails below minKubeVirtFamilies or
// on any family served with another type or other labels.
func checkKubeVirtFamilies(t *testing.T, exposition []byte) {
	t.Helper()
	f, err := os.Open("../../metrics/testdata/kubevirt-metrics.txt")
	require.NoError(t, err)
	defer f.Close()
	want, err := promcheck.ParseFamilies(f)
	require.NoError(t, err)
	require.Len(t, want, 106, "the vendored list has KubeVirt's 106 metrics")
	r := promcheck.Compare(want, exposition, virtkitExtraLabels)
	t.Logf("serves %d of KubeVirt's %d metric families; missing: %v", len(r.Served), len(want), r.Missing)
	assert.Empty(t, r.Mismatched, "families served with another type or other labels than KubeVirt's")
	assert.GreaterOrEqual(t, len(r.Served), minKubeVirtFamilies, "KubeVirt families served after the walk; missing: %v", r.Missing)
}

// dashboardMetric matches the metric names in the dashboard's queries.
var dashboardMetric = regexp.MustCompile(`\b(?:kubevirt|virtkit)_[a-z0-9_]+`)

// checkDashboardMetrics fails when a metric name a query of the example
// Grafana dashboard uses has no series in exposition.
func checkDashboardMetrics(t *testing.T, exposition []byte) {
	t.Helper()
	raw, err := os.ReadFile("../../examples/grafana/virtkit-dashboard.json")
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	served := map[string]bool{}
	for _, line := range strings.Split(string(exposition), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			served[line[:i]] = true
		}
	}
	n := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range dashboardMetric.FindAllString(tg.Expr, -1) {
				n++
				assert.True(t, served[name], "panel %q queries %s, which the scrape after the walk does not serve", p.Title, name)
			}
		}
	}
	require.Positive(t, n, "no metric names in the dashboard's queries")
}

func TestServeDemoMetricsBadAddress(t *testing.T) {
	c, err := cluster.New(cluster.Options{Nodes: 1})
	require.NoError(t, err)
	_, err = serveDemoMetrics(context.Background(), "256.0.0.1:-1", c, io.Discard)
	require.ErrorContains(t, err, "--metrics-addr")
	require.ErrorContains(t, err, "invalid port")
}

func httpGetBody(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// TestDemoHoldEndsOnInterruptAfterTimeout: --timeout bounds the walk, not
// the hold; an interrupt after the timeout has passed still ends the hold.
func TestDemoHoldEndsOnInterruptAfterTimeout(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut proctest.Output
	done := make(chan error, 1)
	const timeout = 20 * time.Second
	start := time.Now()
	go func() {
		done <- runDemo(ctx, &out, &errOut, demoOptions{nodes: 2, hypervisor: "sim", output: "text",
			timeout: timeout, metricsAddr: "127.0.0.1:0", hold: true})
	}()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "holding: serving metrics") },
		timeout, 10*time.Millisecond, "the demo walk did not finish: %s\n%s", out.String(), errOut.String())
	select {
	case err := <-done:
		t.Fatalf("the demo stopped holding on its own: %v", err)
	case <-time.After(time.Until(start.Add(timeout + time.Second))):
	}
	cancel() // the interrupt
	select {
	case err := <-done:
		require.NoError(t, err, errOut.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the demo kept holding after an interrupt that came after --timeout")
	}
}
