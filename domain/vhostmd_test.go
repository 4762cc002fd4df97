package domain_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

func sampleMetrics() domain.Metrics {
	return domain.Metrics{Metrics: []domain.Metric{
		domain.StringMetric(domain.MetricContextHost, "HostName", "node-a&b"),
		domain.IntMetric(domain.MetricContextHost, "Time", "s", 1700000000),
		domain.UintMetric(domain.MetricContextVM, "PhysicalMemoryAllocatedToVirtualSystem", "KiB", 262144),
		domain.RealMetric(domain.MetricContextVM, "TotalCPUTime", "s", 1.5),
	}}
}

func TestVhostmdRoundTrip(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "vhostmd0"))
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, domain.WriteVhostmd(f, sampleMetrics()))
	fi, err := f.Stat()
	require.NoError(t, err)
	assert.EqualValues(t, domain.VhostmdDiskSize, fi.Size())

	raw, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	assert.Equal(t, "mvbd", string(raw[:4]))
	assert.Zero(t, binary.BigEndian.Uint32(raw[4:8]), "flag cleared after the write")
	n := binary.BigEndian.Uint32(raw[12:16])
	body := string(raw[16 : 16+n])
	assert.Contains(t, body, `<metric type="string" context="host">`)
	assert.Contains(t, body, "<name>HostName</name>")
	assert.Contains(t, body, "<value><![CDATA[node-a&b]]></value>")
	assert.Contains(t, body, `<metric type="real64" context="vm" unit="s">`)
	assert.Contains(t, body, "<value><![CDATA[1.500000]]></value>")
	assert.True(t, strings.HasPrefix(body, "<metrics>\n  <metric"), body)
	assert.True(t, strings.HasSuffix(body, "</metrics>\n"), body)

	m, err := domain.ReadVhostmd(f)
	require.NoError(t, err)
	v, ok := m.Get("HostName")
	assert.True(t, ok)
	assert.Equal(t, "node-a&b", v)
	v, _ = m.Get("PhysicalMemoryAllocatedToVirtualSystem")
	assert.Equal(t, "262144", v)

	// A shorter rewrite leaves a valid disk (length and checksum follow it).
	require.NoError(t, domain.WriteVhostmd(f, domain.Metrics{Metrics: sampleMetrics().Metrics[:1]}))
	m, err = domain.ReadVhostmd(f)
	require.NoError(t, err)
	assert.Len(t, m.Metrics, 1)
}

func TestReadVhostmdRejects(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "vhostmd0"))
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, domain.WriteVhostmd(f, sampleMetrics()))
	good, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	for name, mutate := range map[string]func(b []byte){
		"signature": func(b []byte) { b[0] = 'x' },
		"busy":      func(b []byte) { b[7] = 1 },
		"checksum":  func(b []byte) { b[20]++ },
		"length":    func(b []byte) { binary.BigEndian.PutUint32(b[12:], 1<<30) },
	} {
		t.Run(name, func(t *testing.T) {
			b := bytes.Clone(good)
			mutate(b)
			_, err := domain.ReadVhostmd(bytes.NewReader(b))
			assert.ErrorIs(t, err, domain.ErrVhostmd)
		})
	}
}

func TestMarshalMetricsBounded(t *testing.T) {
	big := domain.Metrics{Metrics: []domain.Metric{domain.StringMetric(domain.MetricContextHost, "HostName", strings.Repeat("x", domain.VhostmdDiskSize))}}
	_, err := domain.MarshalMetrics(big)
	assert.ErrorIs(t, err, domain.ErrVhostmd)
}

func TestDownwardMetricsDiskRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		disk virtkit.Disk
		want string
	}{
		"sata":  {virtkit.Disk{Name: "metrics", DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusSATA}}}, "spec.domain.devices.disks[1].disk.bus"},
		"cdrom": {virtkit.Disk{Name: "metrics", DiskDevice: virtkit.DiskDevice{CDRom: &virtkit.CDRomTarget{Bus: virtkit.DiskBusSATA}}}, "spec.domain.devices.disks[1]"},
	} {
		t.Run(name, func(t *testing.T) {
			vmi := decodeVMI(t, "testdata/vmi/downward-metrics.yaml")
			vmi.Spec.Domain.Devices.Disks[1] = tc.disk
			_, err := domain.Build(vmi, domain.Options{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "downwardMetrics")
		})
	}
	vmi := decodeVMI(t, "testdata/vmi/downward-metrics.yaml")
	opts := domain.Options{RuntimeDir: "/run/vk"}
	assert.True(t, domain.HasDownwardMetricsVolume(vmi))
	assert.Equal(t, filepath.Join(domain.RuntimeDir(vmi, opts), "downwardmetrics", "vhostmd0"), domain.DownwardMetricsDisk(vmi, opts))
}
