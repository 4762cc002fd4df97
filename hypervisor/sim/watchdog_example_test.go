package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// A node agent pets the host's watchdog on every heartbeat renewal; when
// it stops (frozen, killed), the guests are stopped at the deadline.
func ExampleHost_PetWatchdog() {
	ctx := context.Background()
	clock := sim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := sim.New(sim.Options{Name: "n1", Clock: clock})
	_, _ = h.Define(ctx, `<domain type='qemu'><name>default_web</name><memory unit='MiB'>256</memory><vcpu>1</vcpu></domain>`)
	_ = h.Start(ctx, "default_web", hypervisor.StartOptions{})

	_ = h.PetWatchdog(ctx, 10*time.Second)
	clock.Advance(8 * time.Second)
	_ = h.PetWatchdog(ctx, 10*time.Second) // renewed in time
	clock.Advance(8 * time.Second)
	info, _ := h.Info(ctx, "default_web")
	fmt.Println("petted:", info.State)

	clock.Advance(3 * time.Second) // no pet: the deadline passes
	info, _ = h.Info(ctx, "default_web")
	fmt.Println("not petted:", info.State, info.Reason, "fired", h.WatchdogFired())
	// Output:
	// petted: Running
	// not petted: Shutoff Destroyed fired 1
}
