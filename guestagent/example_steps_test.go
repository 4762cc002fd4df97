package guestagent_test

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/guestagent/qgaserver"
)

// A caller that polls many guests with its own bounded workers runs each
// guest's poll steps itself, on the steps' intervals, instead of Start's
// goroutines per guest.
func ExamplePoller_PollStep() {
	guest := qgaserver.New(qgaserver.LinuxGuest("web-1", "52:54:00:ab:cd:ef", "10.0.0.7"))
	c := guestagent.New(guestagent.NewPassthroughTransport(passthrough{guest}, "web-1", guestagent.Options{}), guestagent.Options{})
	p := guestagent.NewPoller(c, guestagent.PollerOptions{})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, step := range p.Steps() {
		if err := p.PollStep(ctx, i); err != nil {
			fmt.Println(step.Name, err)
		}
		fmt.Printf("%s every %v\n", step.Name, step.Interval)
	}
	snap := p.Snapshot()
	fmt.Println(snap.Connected, snap.HostName, snap.OSInfo.PrettyName)
	// Output:
	// version every 5m0s
	// filesystems every 5m0s
	// fsfreeze every 5s
	// sys every 2m0s
	// users every 10s
	// true web-1 Fedora Linux 40 (Cloud Edition)
}
