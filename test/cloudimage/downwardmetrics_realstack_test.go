//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package cloudimage_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/xml"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
)

// TestRealDownwardMetrics boots the Debian cloud image with a
// downwardMetrics volume and device. It reads the raw disk in the guest
// (O_DIRECT, past the guest's page cache) through the guest agent: a valid
// vhostmd document with this node's name and the VM's vCPUs and memory,
// whose Time advances as the node refreshes it; then it asks on the
// org.github.vhostmd.1 port and reads the same document.
func TestRealDownwardMetrics(t *testing.T) {
	parallelLane(t)
	img := requireCloudStack(t)
	data, err := os.ReadFile("testdata/downwardmetrics.yaml")
	require.NoError(t, err)
	objs, err := virtkit.DecodeBytes(data)
	require.NoError(t, err)
	require.Len(t, objs, 1)
	vmi := objs[0].(*virtkit.VirtualMachineInstance)

	// Downward metrics need KubeVirt's DownwardMetrics feature gate, off
	// by default.
	c := startCluster(t, img, func(o *cluster.Options) {
		o.KubeVirt = &virtkit.KubeVirtConfiguration{DeveloperConfiguration: &virtkit.DeveloperConfiguration{
			FeatureGates: []string{virtkit.FeatureGateDownwardMetrics}}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout+2*time.Minute)
	defer cancel()
	_, g := bootVMI(ctx, t, c, vmi, objs...)

	// The metrics disk, found by its serial; its first 16 KiB read with
	// O_DIRECT so every read sees what the node last wrote.
	read := func() domain.Metrics {
		t.Helper()
		script := `set -e; for d in /sys/block/vd*; do [ "$(cat $d/serial 2>/dev/null)" = DMETRICS ] && dev=/dev/${d##*/}; done; ` +
			`[ -n "$dev" ]; [ "$(cat /sys/block/${dev##*/}/ro)" = 1 ]; dd if=$dev iflag=direct bs=16384 count=1 2>/dev/null | base64 -w0`
		r, err := g.exec(ctx, "/bin/sh", "-c", script)
		require.NoError(t, err)
		require.Equal(t, 0, r.Code, r.Stderr)
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(r.Stdout))
		require.NoError(t, err)
		m, err := domain.ReadVhostmd(bytes.NewReader(raw))
		require.NoError(t, err, "the guest reads a whole vhostmd document")
		return m
	}
	m := read()
	var lines []string
	for _, x := range m.Metrics {
		lines = append(lines, x.Context+" "+x.Name+"="+x.Text())
	}
	t.Logf("metrics the guest reads:\n%s", strings.Join(lines, "\n"))
	for k, want := range map[string]string{
		"HostName":                               nodeName,
		"VirtualizationVendor":                   "kubevirt.io",
		"ResourceProcessorLimit":                 "1",
		"PhysicalMemoryAllocatedToVirtualSystem": strconv.Itoa(512 * 1024),
	} {
		v, ok := m.Get(k)
		assert.True(t, ok, k)
		assert.Equal(t, want, v, k)
	}
	pv, _ := m.Get("VirtProductInfo")
	assert.Regexp(t, `^\d+\.\d+\.\d+$`, pv, "QEMU's version as libvirt reports it")
	t0, _ := m.Get("Time")
	require.Eventually(t, func() bool {
		t1, _ := read().Get("Time")
		return t1 > t0
	}, 2*time.Minute, 3*time.Second, "the node refreshes the disk the guest reads")

	// The channel: a request written to the port is answered with the
	// document and a blank line.
	script := `exec 3<>/dev/virtio-ports/` + domain.DownwardMetricsChannel + `; printf 'GET /metrics/XML\n\n' >&3; timeout 60 sed '/^$/q' <&3`
	r, err := g.exec(ctx, "/bin/sh", "-c", script)
	require.NoError(t, err)
	require.Equal(t, 0, r.Code, r.Stderr)
	var cm domain.Metrics
	require.NoError(t, xml.Unmarshal([]byte(r.Stdout), &cm), r.Stdout)
	v, _ := cm.Get("HostName")
	assert.Equal(t, nodeName, v)
	v, _ = cm.Get("ResourceProcessorLimit")
	assert.Equal(t, "1", v)
	t.Logf("channel answer: %d bytes, %d metrics", len(r.Stdout), len(cm.Metrics))
}
