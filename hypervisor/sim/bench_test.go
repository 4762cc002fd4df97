package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// BenchmarkLifecycle is one define+start+destroy+undefine cycle on a host
// on the real clock (the embedded default).
func BenchmarkLifecycle(b *testing.B) {
	ctx := context.Background()
	h := sim.New(sim.Options{})
	xml := testDomainXML("default_bench")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Define(ctx, xml); err != nil {
			b.Fatal(err)
		}
		if err := h.Start(ctx, "default_bench", hypervisor.StartOptions{}); err != nil {
			b.Fatal(err)
		}
		if err := h.Destroy(ctx, "default_bench"); err != nil {
			b.Fatal(err)
		}
		if err := h.Undefine(ctx, "default_bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMigrationP2 simulates the reference's P2 profile (8 GiB, 1 GbE,
// 50 MB/s over 512 MiB: 82 simulated seconds) on the virtual clock.
func BenchmarkMigrationP2(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		clock := sim.NewVirtualClock(epoch)
		src := sim.New(sim.Options{Name: "src", Clock: clock})
		dst := sim.New(sim.Options{Name: "dst", Clock: clock})
		if err := sim.NewNetwork().Connect(src, dst, sim.Link{Bandwidth: 115 * MB}); err != nil {
			b.Fatal(err)
		}
		if _, err := src.Define(ctx, sizedDomainXML(vmName, 8*GiB, 2)); err != nil {
			b.Fatal(err)
		}
		_ = src.Start(ctx, vmName, hypervisor.StartOptions{})
		_ = src.SetWorkload(vmName, sim.Workload{DirtyRate: 50 * MB, WorkingSet: 512 * MiB, ThrottleSensitivity: 1})
		job, err := src.StartMigration(ctx, vmName, hypervisor.MigrationParams{DestinationURI: "dst"})
		if err != nil {
			b.Fatal(err)
		}
		for done := false; !done; {
			clock.Advance(400 * time.Millisecond)
			if _, err := job.Stats(ctx); err != nil {
				b.Fatal(err)
			}
			select {
			case <-job.Done():
				done = true
			default:
			}
		}
	}
}
