//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package cloudimage_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/store"
)

// hotplugNodeName is the hot-plug test's node: a name of its own, so the
// agents of other tests on the same daemon leave its domain alone.
const hotplugNodeName = "cpuhot-img-a"

var memTotal = regexp.MustCompile(`(?m)^MemTotal:\s+(\d+) kB`)

// TestRealHotplugCPUAndMemory runs a VM of the Debian cloud image with 1
// socket (of maxSockets 4) and 1Gi of memory (of maxGuest 4Gi) and, under
// KubeVirt's LiveUpdate rollout, raises its template to 2 sockets and
// 2Gi: the node agent plugs a vCPU and asks the virtio-mem device for
// 1Gi more, and the guest counts the new CPU (guest-get-vcpus) and its
// kernel's virtio_mem driver plugs the memory (status.memory.guestCurrent,
// /proc/meminfo).
func TestRealHotplugCPUAndMemory(t *testing.T) {
	parallelLane(t)
	img := requireCloudStack(t)
	_, tmplVMI := loadVMIManifest(t, "testdata/nocloud.yaml")
	c := startCluster(t, img, func(o *cluster.Options) { o.NodeNames = []string{hotplugNodeName} })
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout+5*time.Minute)
	defer cancel()

	const ns, name = "cpuhot-img", "hot"
	guestMem := resource.MustParse("1Gi")
	spec := tmplVMI.Spec.DeepCopy()
	spec.Domain.Memory = &virtkit.Memory{Guest: &guestMem}
	spec.Domain.CPU = &virtkit.CPU{Sockets: 1, Cores: 1, Threads: 1}
	always := virtkit.RunStrategyAlways
	vm := &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: virtkit.VirtualMachineSpec{RunStrategy: &always,
			Template: &virtkit.VirtualMachineInstanceTemplateSpec{Spec: *spec}},
	}
	hv := c.Node(hotplugNodeName).Hypervisor
	dom := ns + "_" + name
	_ = hv.Destroy(ctx, dom) // a guest an interrupted run left behind
	_ = hv.Undefine(ctx, dom)
	require.NoError(t, c.Apply(ctx, vm))
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
		defer dcancel()
		_ = c.Store().Delete(dctx, vm, store.DeleteOptions{})
	})
	start := time.Now()
	bctx, bcancel := context.WithTimeout(ctx, bootTimeout)
	vmi, err := c.WaitForVMI(bctx, ns, name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && (v.IsFinal() || v.IsRunning() && virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected))
	})
	bcancel()
	require.NoError(t, err, "the Debian guest boots and its agent answers")
	require.False(t, vmi.IsFinal(), "VMI ended: %+v", vmi.Status)
	t.Logf("boot to guest agent: %s", time.Since(start).Round(100*time.Millisecond))
	require.Equal(t, dom, domain.DomainName(vmi))
	opts := guestagent.Options{CallTimeout: 30 * time.Second}
	ac := hv.(hypervisor.AgentCommander)
	g := guest{c: guestagent.New(guestagent.NewPassthroughTransport(ac, dom, opts), opts)}

	vcpus := func() (all, online int, err error) {
		var cpus []struct {
			Online bool `json:"online"`
		}
		if err := g.c.Execute(ctx, "guest-get-vcpus", nil, &cpus); err != nil {
			return 0, 0, err
		}
		for _, c := range cpus {
			if c.Online {
				online++
			}
		}
		return len(cpus), online, nil
	}
	memTotalKiB := func() (int64, error) {
		b, err := g.readFile(ctx, "/proc/meminfo")
		if err != nil {
			return 0, err
		}
		m := memTotal.FindSubmatch(b)
		if m == nil {
			return 0, fmt.Errorf("no MemTotal in /proc/meminfo")
		}
		return strconv.ParseInt(string(m[1]), 10, 64)
	}
	all, on, err := vcpus()
	require.NoError(t, err)
	require.Equal(t, 1, all)
	require.Equal(t, 1, on)
	memBefore, err := memTotalKiB()
	require.NoError(t, err)

	key := store.Key{Namespace: ns, Name: name}
	edit := func(f func(*virtkit.DomainSpec)) {
		require.NoError(t, store.RetryOnConflict(ctx, store.Backoff{}, func(ctx context.Context) error {
			vm := &virtkit.VirtualMachine{}
			if err := c.Store().Get(ctx, key, vm); err != nil {
				return err
			}
			f(&vm.Spec.Template.Spec.Domain)
			return c.Store().Update(ctx, vm)
		}))
	}

	// A CPU added to the running VM is counted by the guest.
	edit(func(d *virtkit.DomainSpec) { d.CPU.Sockets = 2 })
	_, err = c.WaitForVMI(ctx, ns, name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.CurrentCPUTopology != nil && v.Status.CurrentCPUTopology.Sockets == 2
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		all, on, err = vcpus()
		return err == nil && all == 2
	}, 2*time.Minute, time.Second, "the guest counts 2 CPUs (last: %d, %d online, %v)", all, on, err)
	if on < 2 {
		// Debian's udev has no rule that onlines a hot-added CPU; what the
		// guest has to do, its agent does (KubeVirt leaves it to the guest).
		t.Logf("the hot-added CPU is offline in the guest: onlining it through the agent")
		r, err := g.exec(ctx, "/bin/sh", "-c", "for c in /sys/devices/system/cpu/cpu[0-9]*/online; do [ \"$(cat $c)\" = 1 ] || echo 1 > $c; done")
		require.NoError(t, err)
		require.Equal(t, 0, r.Code, "%s", r.Stderr)
	} else {
		t.Logf("the guest brought the hot-added CPU online by itself")
	}
	require.Eventually(t, func() bool {
		all, on, err = vcpus()
		return err == nil && on == 2
	}, time.Minute, time.Second, "2 online CPUs in the guest (last: %d, %d online, %v)", all, on, err)
	if r, err := g.exec(ctx, "/usr/bin/nproc"); err == nil {
		t.Logf("guest nproc: %s", strings.TrimSpace(r.Stdout))
		assert.Equal(t, "2", strings.TrimSpace(r.Stdout))
	}

	// Memory: 1Gi more through the virtio-mem device.
	edit(func(d *virtkit.DomainSpec) { g := resource.MustParse("2Gi"); d.Memory.Guest = &g })
	_, err = c.WaitForVMI(ctx, ns, name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		m := v.Status.Memory
		return found && m != nil && m.GuestRequested != nil && m.GuestRequested.String() == "2Gi"
	})
	require.NoError(t, err)
	mctx, mcancel := context.WithTimeout(ctx, 2*time.Minute)
	vmi, err = c.WaitForVMI(mctx, ns, name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		m := v.Status.Memory
		return found && m != nil && m.GuestCurrent != nil && m.GuestCurrent.String() == "2Gi"
	})
	mcancel()
	if err == nil {
		assert.Equal(t, "1Gi", vmi.Status.Memory.GuestAtBoot.String())
	}
	if err != nil {
		if r, xerr := g.exec(ctx, "/bin/sh", "-c", "lsmod | grep virtio_mem; dmesg | grep -i virtio_mem | tail -5"); xerr == nil {
			t.Logf("guest virtio_mem: %s %s", r.Stdout, r.Stderr)
		}
	}
	require.NoError(t, err, "the guest's virtio_mem driver plugs the requested memory (status.memory.guestCurrent)")
	var memAfter int64
	grown := func() bool {
		memAfter, err = memTotalKiB()
		return err == nil && memAfter-memBefore >= 900<<10
	}
	if !poll(ctx, grown, 30*time.Second, 2*time.Second) {
		// The kernel leaves hot-added memory blocks offline unless told
		// otherwise (auto_online_blocks); what a udev rule would do, the
		// agent does.
		if r, err := g.readFile(ctx, "/sys/devices/system/memory/auto_online_blocks"); err == nil {
			t.Logf("guest auto_online_blocks: %s; onlining the plugged blocks through the agent", strings.TrimSpace(string(r)))
		}
		r, err := g.exec(ctx, "/bin/sh", "-c", "for m in /sys/devices/system/memory/memory[0-9]*/state; do grep -q offline $m && echo online > $m; done; true")
		require.NoError(t, err)
		require.Equal(t, 0, r.Code, "%s", r.Stderr)
		require.Eventually(t, grown, time.Minute, 2*time.Second, "MemTotal grows by about 1Gi (before %d kB, after %d kB)", memBefore, memAfter)
	}
	t.Logf("guest MemTotal: %d kB before, %d kB after the hot-plug", memBefore, memAfter)
}

// poll reports whether cond held within d, checking every tick, without
// failing the test when it did not.
func poll(ctx context.Context, cond func() bool, d, tick time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(tick)
	}
}
