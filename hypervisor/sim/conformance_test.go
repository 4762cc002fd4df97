package sim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor/hypervisortest"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// testDomainXML is a small bootable definition with the guest-agent channel.
func testDomainXML(name string) string {
	return fmt.Sprintf(`<domain type='qemu'>
  <name>%s</name>
  <memory unit='MiB'>128</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64'>hvm</type></os>
  <devices>
    <disk type='file' device='disk'><source file='/var/lib/virtkit/%[1]s.qcow2'/><target dev='vda' bus='virtio'/></disk>
    <interface type='network'><source network='default'/><model type='virtio'/></interface>
    <channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel>
  </devices>
</domain>`, name)
}

func conformanceTarget(t *testing.T, clock sim.Clock) hypervisortest.Target {
	src := sim.New(sim.Options{Name: "src", Clock: clock})
	dst := sim.New(sim.Options{Name: "dst", Clock: clock})
	net := sim.NewNetwork()
	require.NoError(t, net.Connect(src, dst, sim.Link{Bandwidth: 1 << 30}))
	return hypervisortest.Target{
		Hypervisor:   src,
		DomainXML:    testDomainXML,
		BootTimeout:  5 * time.Second,
		AgentTimeout: 5 * time.Second,
		Peer:         dst,
		PeerURI:      dst.Name(),
		DirtyMemory: func(t *testing.T, name string) {
			require.NoError(t, src.SetWorkload(name, sim.Workload{DirtyRate: 200 << 20, WorkingSet: 64 << 20, ThrottleSensitivity: 1}))
		},
	}
}

func TestConformanceRealClock(t *testing.T) {
	hypervisortest.Run(t, func(t *testing.T) hypervisortest.Target {
		return conformanceTarget(t, sim.RealClock{})
	})
}

func TestConformanceVirtualClock(t *testing.T) {
	hypervisortest.Run(t, func(t *testing.T) hypervisortest.Target {
		clock := sim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		autoAdvance(t, clock)
		return conformanceTarget(t, clock)
	})
}

// autoAdvance moves clock 5 ms every real millisecond until the test ends,
// standing in for a driver loop while the suite polls in real time.
func autoAdvance(t *testing.T, clock *sim.VirtualClock) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				clock.Advance(5 * time.Millisecond)
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}
