package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// A migration driven on a virtual clock: advance, read the job's
// statistics, steer, until the job is done. Same inputs, same output.
func Example_migration() {
	ctx := context.Background()
	clock := sim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	src := sim.New(sim.Options{Name: "src", Clock: clock})
	dst := sim.New(sim.Options{Name: "dst", Clock: clock})
	network := sim.NewNetwork()
	if err := network.Connect(src, dst, sim.Link{Bandwidth: 115_000_000}); err != nil { // 1 GbE
		fmt.Println(err)
		return
	}
	const name = "default_web"
	domainXML := `<domain type='qemu'><name>default_web</name><memory unit='GiB'>2</memory><vcpu>2</vcpu></domain>`
	if _, err := src.Define(ctx, domainXML); err != nil {
		fmt.Println(err)
		return
	}
	_ = src.Start(ctx, name, hypervisor.StartOptions{})
	_ = src.SetWorkload(name, sim.Workload{DirtyRate: 50_000_000, WorkingSet: 256 << 20, ThrottleSensitivity: 1})

	job, err := src.StartMigration(ctx, name, hypervisor.MigrationParams{DestinationURI: "dst"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for done := false; !done; {
		clock.Advance(400 * time.Millisecond)
		st, _ := job.Stats(ctx)
		if st.MemoryIteration.Value == 3 && st.Type == hypervisor.JobUnbounded {
			// Ask for a shorter pause than QEMU's default 300 ms.
			_ = job.SetMaxDowntime(ctx, 100*time.Millisecond)
		}
		select {
		case <-job.Done():
			done = true
		default:
		}
	}
	res, err := job.Result(ctx)
	fmt.Println("succeeded:", res.Succeeded, err)
	fmt.Println("total:", res.Ended.Sub(res.Started).Round(100*time.Millisecond))
	fmt.Println("downtime:", res.Stats.Downtime.Value.Round(time.Millisecond))
	fmt.Println("iterations:", res.Stats.MemoryIteration.Value)
	info, _ := dst.Info(ctx, name)
	fmt.Println("target:", info.State, info.Reason)
	// Output:
	// succeeded: true <nil>
	// total: 22.2s
	// downtime: 129ms
	// iterations: 10
	// target: Running Migrated
}

// The lifecycle of one domain on a virtual clock: the guest agent answers
// once the guest has booted.
func ExampleNew() {
	ctx := context.Background()
	clock := sim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	host := sim.New(sim.Options{Name: "node1", Clock: clock, BootDelay: 5 * time.Second})
	id, err := host.Define(ctx, `<domain type='kvm'>
  <name>default_testvm</name>
  <memory unit='MiB'>512</memory>
  <vcpu>2</vcpu>
  <devices><channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel></devices>
</domain>`)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = host.Start(ctx, id.Name, hypervisor.StartOptions{})
	info, _ := host.Info(ctx, id.Name)
	fmt.Println(info.State, info.Reason, info.Agent)

	clock.Advance(5 * time.Second)
	reply, _ := host.AgentCommand(ctx, id.Name, `{"execute":"guest-ping"}`)
	info, _ = host.Info(ctx, id.Name)
	fmt.Println(info.Agent, reply, info.CPUTime.Value)

	_ = host.Pause(ctx, id.Name)
	info, _ = host.Info(ctx, id.Name)
	fmt.Println(info.State, info.Reason, info.Agent)
	_ = host.Destroy(ctx, id.Name)
	info, _ = host.Info(ctx, id.Name)
	fmt.Println(info.State, info.Reason)
	// Output:
	// Running Booted disconnected
	// connected {"return":{}} 500ms
	// Paused User disconnected
	// Shutoff Destroyed
}

// A host with libvirt's face: its migrations say up front that they have no
// direct throttle and no dirty-rate measurement while they run.
func ExampleOptions_libvirtFace() {
	h := sim.New(sim.Options{Name: "src", LibvirtFace: true})
	caps, _ := h.MigrationCapabilities(context.Background())
	fmt.Printf("direct throttle: %v, dirty rate during the job: %v\n", caps.DirectThrottle, caps.DirtyRateDuringJob)
	// Output:
	// direct throttle: false, dirty rate during the job: false
}
