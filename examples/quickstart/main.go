// Command quickstart is the demo's walk in library calls: an embedded
// control plane with two simulated hosts, a VirtualMachine started, paused,
// unpaused, stopped and started again.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

const manifest = `
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: hello, namespace: default}
spec:
  runStrategy: Halted
  template:
    spec:
      domain:
        memory: {guest: 512Mi}
        devices:
          disks: [{name: root, disk: {bus: virtio}}]
      volumes:
      - {name: root, containerDisk: {image: quay.io/containerdisks/fedora:latest}}
`

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	c, err := cluster.New(cluster.Options{Nodes: 2}) // memory store, simulated hosts
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = c.Start(runCtx) }()

	objs, err := virtkit.Decode(strings.NewReader(manifest))
	if err != nil {
		return err
	}
	if err := c.Apply(ctx, objs...); err != nil {
		return err
	}
	key := store.Key{Namespace: "default", Name: "hello"}
	st := c.Store()

	// Each action is a library call with virtctl's rules; each wait is on
	// the status KubeVirt would report.
	steps := []struct {
		do   func() error
		want virtkit.VirtualMachinePrintableStatus
	}{
		{func() error { return nil }, virtkit.VirtualMachineStatusStopped},
		{func() error { return actions.Start(ctx, st, key, actions.StartOptions{}) }, virtkit.VirtualMachineStatusRunning},
		{func() error { return actions.Pause(ctx, st, key) }, virtkit.VirtualMachineStatusPaused},
		{func() error { return actions.Unpause(ctx, st, key) }, virtkit.VirtualMachineStatusRunning},
		{func() error { return actions.Stop(ctx, st, key, actions.StopOptions{}) }, virtkit.VirtualMachineStatusStopped},
		{func() error { return actions.Start(ctx, st, key, actions.StartOptions{}) }, virtkit.VirtualMachineStatusRunning},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			return err
		}
		if _, err := c.WaitForVM(ctx, key.Namespace, key.Name, cluster.VMPrintableStatusIs(s.want)); err != nil {
			return err
		}
		fmt.Fprintf(out, "vm/%s: %s\n", key.Name, s.want)
	}
	vmi := &virtkit.VirtualMachineInstance{}
	if err := st.Get(ctx, key, vmi); err != nil {
		return err
	}
	fmt.Fprintf(out, "vmi/%s runs on %s\n", vmi.Name, vmi.Status.NodeName)
	return nil
}
