package node_test

import (
	"bufio"
	"context"
	xml2 "encoding/xml"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

func newMetricsVMI(t *testing.T, st store.Store, name string, tweaks ...func(*virtkit.VirtualMachineInstance)) *virtkit.VirtualMachineInstance {
	t.Helper()
	ctx := context.Background()
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels: map[string]string{virtkit.NodeNameLabel: nodeName}},
	}
	mem := resource.MustParse("128Mi")
	grace := int64(1)
	vmi.Spec.Domain.Memory = &virtkit.Memory{Guest: &mem}
	vmi.Spec.Domain.CPU = &virtkit.CPU{Cores: 2}
	vmi.Spec.TerminationGracePeriodSeconds = &grace
	vmi.Spec.Domain.Devices.Disks = []virtkit.Disk{{Name: "metrics", DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusVirtio}}}}
	vmi.Spec.Volumes = []virtkit.Volume{{Name: "metrics", VolumeSource: virtkit.VolumeSource{DownwardMetrics: &virtkit.DownwardMetricsVolumeSource{}}}}
	for _, f := range tweaks {
		f(vmi)
	}
	virtkit.SetDefaults(vmi)
	require.Empty(t, virtkit.Validate(vmi))
	require.NoError(t, st.Create(ctx, vmi))
	vmi.Status.NodeName = nodeName
	vmi.SetPhase(virtkit.Scheduled, metav1.Now())
	require.NoError(t, st.UpdateStatus(ctx, vmi))
	return vmi
}

func readMetricsDisk(path string) (domain.Metrics, error) {
	f, err := os.Open(path)
	if err != nil {
		return domain.Metrics{}, err
	}
	defer f.Close()
	return domain.ReadVhostmd(f)
}

// TestDownwardMetricsDisk: the node creates the vhostmd disk before the
// domain is defined, fills it with the host's and the VM's metrics,
// refreshes it, and removes it with the domain.
func TestDownwardMetricsDisk(t *testing.T) {
	ctx := context.Background()
	st, hv := store.NewMemory(), sim.New(sim.Options{Name: nodeName})
	runDir := t.TempDir()
	var now atomicTime
	now.set(time.Unix(1_800_000_000, 0))
	stop := runAgent(t, st, hv, func(o *node.Options) {
		o.Domain.RuntimeDir = runDir
		o.Clock = realTimers{now: now.get}
		o.DownwardMetrics = node.DownwardMetricsOptions{
			Interval: 20 * time.Millisecond,
			ProcDir:  "testdata/downwardmetrics/proc",
			SysDir:   "testdata/downwardmetrics/sys",
		}
	})
	defer stop()
	vmi := newMetricsVMI(t, st, "metrics")
	running := eventuallyPhase(t, st, "metrics", virtkit.Running)
	disk := domain.DownwardMetricsDisk(running, domain.Options{RuntimeDir: runDir})
	xml, err := hv.XML(ctx, domain.DomainName(vmi))
	require.NoError(t, err)
	assert.Contains(t, xml, `<source file="`+disk+`">`)

	var m domain.Metrics
	require.Eventually(t, func() bool {
		m, err = readMetricsDisk(disk)
		_, vm := m.Get("ResourceProcessorLimit")
		return err == nil && vm
	}, 15*time.Second, 20*time.Millisecond, "the disk carries the VM's metrics: %v", err)
	want := map[string]string{
		"HostName":                               nodeName,
		"HostSystemInfo":                         "linux",
		"VirtualizationVendor":                   "kubevirt.io",
		"ResourceProcessorLimit":                 "2",
		"PhysicalMemoryAllocatedToVirtualSystem": "131072",
		"ResourceMemoryLimit":                    "131072",
		"NumberOfPhysicalCPUs":                   "2",
		"FreePhysicalMemory":                     "2000000",
		"FreeVirtualMemory":                      "2900000",
		"MemoryAllocatedToVirtualServers":        "4000000",
		"UsedVirtualMemory":                      "4990000",
		"PagedInMemory":                          strconv.Itoa(256 * os.Getpagesize() / 1024),
		"PagedOutMemory":                         strconv.Itoa(512 * os.Getpagesize() / 1024),
	}
	for k, v := range want {
		got, ok := m.Get(k)
		assert.True(t, ok, k)
		assert.Equal(t, v, got, k)
	}
	var names []string
	for _, x := range m.Metrics {
		names = append(names, x.Context+"/"+x.Name)
	}
	assert.Equal(t, []string{"host/HostName", "host/HostSystemInfo", "host/VirtualizationVendor", "host/VirtProductInfo",
		"vm/TotalCPUTime", "vm/ResourceProcessorLimit", "vm/PhysicalMemoryAllocatedToVirtualSystem", "vm/ResourceMemoryLimit",
		"host/NumberOfPhysicalCPUs", "host/TotalCPUTime", "host/FreePhysicalMemory", "host/FreeVirtualMemory",
		"host/MemoryAllocatedToVirtualServers", "host/UsedVirtualMemory", "host/PagedInMemory", "host/PagedOutMemory", "host/Time"}, names)
	assert.Equal(t, "15.000000", m.Metrics[9].Text(), "host CPU time: user+nice+system at USER_HZ")

	// Refreshed: a later time shows up.
	now.set(time.Unix(1_800_000_100, 0))
	require.Eventually(t, func() bool {
		m, err := readMetricsDisk(disk)
		v, _ := m.Get("Time")
		return err == nil && v == "1800000100"
	}, 15*time.Second, 20*time.Millisecond)

	// Removed with the domain.
	require.NoError(t, st.Delete(ctx, running, store.DeleteOptions{}))
	require.Eventually(t, func() bool { _, ok := getVMI(t, st, "metrics"); return !ok }, 15*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { _, err := os.Stat(disk); return os.IsNotExist(err) }, 15*time.Second, 20*time.Millisecond)
}

type atomicTime struct{ v atomic.Int64 }

func (a *atomicTime) set(t time.Time) { a.v.Store(t.UnixNano()) }
func (a *atomicTime) get() time.Time  { return time.Unix(0, a.v.Load()) }

// TestDownwardMetricsChannel plays QEMU's side of the
// org.github.vhostmd.1 port: it listens on the channel's socket, the agent
// connects, and requests written as the guest writes them are answered
// with the metrics document, bad ones with INVALID REQUEST.
func TestDownwardMetricsChannel(t *testing.T) {
	ctx := context.Background()
	st, hv := store.NewMemory(), sim.New(sim.Options{Name: nodeName})
	runDir := t.TempDir()
	stop := runAgent(t, st, hv, func(o *node.Options) {
		o.Domain.RuntimeDir = runDir
		o.DownwardMetrics = node.DownwardMetricsOptions{ProcDir: "testdata/downwardmetrics/proc", SysDir: "testdata/downwardmetrics/sys"}
	})
	defer stop()
	vmi := newMetricsVMI(t, st, "chan", func(v *virtkit.VirtualMachineInstance) {
		v.Spec.Domain.Devices.DownwardMetrics = &virtkit.DownwardMetrics{}
		v.Spec.Domain.Devices.Disks, v.Spec.Volumes = nil, nil
	})
	sock := domain.DownwardMetricsSocket(vmi, domain.Options{RuntimeDir: runDir})
	require.NoError(t, os.MkdirAll(filepath.Dir(sock), 0o755))
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	running := eventuallyPhase(t, st, "chan", virtkit.Running)
	xml, err := hv.XML(ctx, domain.DomainName(vmi))
	require.NoError(t, err)
	assert.Contains(t, xml, `<target type="virtio" name="org.github.vhostmd.1">`)

	conn, err := l.Accept()
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	r := bufio.NewReader(conn)
	ask := func(req string) string {
		t.Helper()
		_, err := conn.Write([]byte(req))
		require.NoError(t, err)
		var b strings.Builder
		for {
			line, err := r.ReadString('\n')
			require.NoError(t, err)
			if line == "\n" {
				return b.String()
			}
			b.WriteString(line)
		}
	}
	got := ask("GET /metrics/XML\n\n")
	var m domain.Metrics
	require.NoError(t, xml2.Unmarshal([]byte(got), &m), got)
	v, _ := m.Get("HostName")
	assert.Equal(t, nodeName, v)
	v, _ = m.Get("ResourceProcessorLimit")
	assert.Equal(t, "2", v)
	assert.Equal(t, "INVALID REQUEST\n", ask("GET /other\n\n"))
	assert.Equal(t, "INVALID REQUEST\n", ask(strings.Repeat("x", 10000)+"\n\n"))
	assert.Contains(t, ask("GET /metrics/XML\n\n"), "<name>HostName</name>", "served again after bad requests")

	// The agent disconnects when the domain is removed.
	require.NoError(t, st.Delete(ctx, running, store.DeleteOptions{}))
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = r.ReadByte()
	assert.ErrorIs(t, err, io.EOF)
}

// TestDownwardMetricsDomainGone: a domain that disappears without the
// agent removing it (undefined behind its back) takes its refresher and
// disk with it.
func TestDownwardMetricsDomainGone(t *testing.T) {
	ctx := context.Background()
	st, hv := store.NewMemory(), sim.New(sim.Options{Name: nodeName})
	runDir := t.TempDir()
	stop := runAgent(t, st, hv, func(o *node.Options) {
		o.Domain.RuntimeDir = runDir
		o.DownwardMetrics = node.DownwardMetricsOptions{Interval: 20 * time.Millisecond}
	})
	defer stop()
	vmi := newMetricsVMI(t, st, "gone")
	running := eventuallyPhase(t, st, "gone", virtkit.Running)
	disk := domain.DownwardMetricsDisk(running, domain.Options{RuntimeDir: runDir})
	require.FileExists(t, disk)
	require.NoError(t, hv.Destroy(ctx, domain.DomainName(vmi)))
	require.NoError(t, hv.Undefine(ctx, domain.DomainName(vmi)))
	require.Eventually(t, func() bool { _, err := os.Stat(disk); return os.IsNotExist(err) }, 15*time.Second, 20*time.Millisecond)
}
