package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// On a mesh network every host that joined can migrate to every other
// without a Connect per pair; SetLink still overrides one direction.
func ExampleNewMeshNetwork() {
	ctx := context.Background()
	clock := sim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	net, err := sim.NewMeshNetwork(sim.Link{Bandwidth: 1_000_000_000}) // 1 GB/s
	if err != nil {
		fmt.Println(err)
		return
	}
	hosts := map[string]*sim.Host{}
	for _, name := range []string{"a", "b", "c"} {
		hosts[name] = sim.New(sim.Options{Name: name, Clock: clock})
		if err := net.Join(hosts[name]); err != nil {
			fmt.Println(err)
			return
		}
	}
	_ = net.SetLink(hosts["a"], hosts["c"], sim.Link{Bandwidth: 100_000_000}) // a slower path
	const name = "default_web"
	_, _ = hosts["a"].Define(ctx, `<domain type='qemu'><name>default_web</name><memory unit='GiB'>1</memory><vcpu>1</vcpu></domain>`)
	_ = hosts["a"].Start(ctx, name, hypervisor.StartOptions{})

	migrate := func(from, to string) {
		job, err := hosts[from].StartMigration(ctx, name, hypervisor.MigrationParams{DestinationURI: to})
		if err != nil {
			fmt.Println(err)
			return
		}
		for done := false; !done; {
			clock.Advance(100 * time.Millisecond)
			select {
			case <-job.Done():
				done = true
			default:
			}
		}
		res, err := job.Result(ctx)
		fmt.Printf("%s -> %s: succeeded %v in %v %v\n", from, to, res.Succeeded, res.Ended.Sub(res.Started).Round(100*time.Millisecond), err)
	}
	migrate("a", "b") // the mesh link
	migrate("b", "c") // the mesh link
	migrate("c", "a") // the mesh link back (SetLink set a -> c only)
	migrate("a", "c") // the slower link
	_, err = hosts["a"].StartMigration(ctx, name, hypervisor.MigrationParams{DestinationURI: "nowhere"})
	fmt.Println(err != nil)
	// Output:
	// a -> b: succeeded true in 1.1s <nil>
	// b -> c: succeeded true in 1.1s <nil>
	// c -> a: succeeded true in 1.1s <nil>
	// a -> c: succeeded true in 10.8s <nil>
	// true
}

// Two simulated hosts that share no Network, as in two processes: the
// target listens for migrations on a TCP port and the source migrates to
// its tcp:// address; the guest's pages cross the socket.
func ExampleListenMigration() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := sim.New(sim.Options{Name: "host-a"})
	dst := sim.New(sim.Options{Name: "host-b"})
	l, err := sim.ListenMigration(ctx, dst, "tcp://127.0.0.1:0", sim.ListenOptions{})
	if err != nil {
		panic(err)
	}
	served := make(chan error, 1)
	go func() { served <- l.Serve(ctx) }()

	const domainXML = `<domain type='qemu'><name>web</name><memory unit='MiB'>64</memory><vcpu>1</vcpu></domain>`
	if _, err := src.Define(ctx, domainXML); err != nil {
		panic(err)
	}
	if err := src.Start(ctx, "web", hypervisor.StartOptions{}); err != nil {
		panic(err)
	}
	job, err := src.StartMigration(ctx, "web", hypervisor.MigrationParams{DestinationURI: l.URI()})
	if err != nil {
		panic(err)
	}
	res, err := job.Result(ctx)
	if err != nil {
		panic(err)
	}
	info, _ := dst.Info(ctx, "web")
	fmt.Println("succeeded:", res.Succeeded, "on host-b:", info.State)
	fmt.Println("at least 64 MiB crossed the socket:", l.ReceivedBytes() >= 64<<20)
	cancel()
	<-served
	// Output:
	// succeeded: true on host-b: Running
	// at least 64 MiB crossed the socket: true
}
