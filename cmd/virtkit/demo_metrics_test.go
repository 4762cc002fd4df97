package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/internal/testenv"
)

// syncBuffer is a bytes.Buffer safe to read while the demo writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var metricsURL = regexp.MustCompile(`metrics: (http://\S+/metrics)`)

// TestDemoServesMetricsThatPassPromtool runs the demo in-process with
// --metrics-addr and --hold, scrapes /metrics after the walk and checks
// the exposition with promtool (no lint warning allowed).
func TestDemoServesMetricsThatPassPromtool(t *testing.T) {
	promtool := testenv.LookTool(t, "promtool", "Debian prometheus")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runDemo(ctx, &out, &errOut, demoOptions{nodes: 2, hypervisor: "sim", output: "text",
			timeout: 2 * time.Minute, metricsAddr: "127.0.0.1:0", hold: true})
	}()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "holding: serving metrics") },
		2*time.Minute, 20*time.Millisecond, "the demo walk did not finish: %s\n%s", out.String(), errOut.String())
	m := metricsURL.FindStringSubmatch(out.String())
	require.NotNil(t, m, "no metrics URL printed: %s", out.String())

	resp, err := http.Get(m[1])
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, want := range []string{"kubevirt_vmi_info{", "kubevirt_vmi_cpu_usage_seconds_total{", "kubevirt_vm_info{", "kubevirt_workqueue_depth{"} {
		assert.Contains(t, string(body), want)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	lint, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s", lint)
	assert.Empty(t, strings.TrimSpace(string(lint)))

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

func TestServeDemoMetricsBadAddress(t *testing.T) {
	c, err := cluster.New(cluster.Options{Nodes: 1})
	require.NoError(t, err)
	_, err = serveDemoMetrics(context.Background(), "256.0.0.1:-1", c, io.Discard)
	require.ErrorContains(t, err, "--metrics-addr")
	require.ErrorContains(t, err, "invalid port")
}
