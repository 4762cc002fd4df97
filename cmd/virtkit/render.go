package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/render"
	"github.com/virtkit/virtkit/domain"
)

func newRenderCmd() *cobra.Command {
	var o render.Options
	cmd := &cobra.Command{
		Use:   "render -f FILE [--accel qemu|kvm]",
		Short: "Print the libvirt domain XML of each VMI, VM template and ReplicaSet template in a manifest",
		Long: `render decodes FILE ("-" for stdin), applies KubeVirt's defaults, validates,
and prints one libvirt domain XML document per VirtualMachineInstance,
VirtualMachine (its template) and VirtualMachineInstanceReplicaSet (its
template), in file order. Other kinds are skipped with a note on stderr.

Volumes map to paths under /var/lib/virtkit and sockets to /run/virtkit;
render creates no files. A VMI without firmware.uuid gets a UUID derived
from its namespace and name, so the output is reproducible.

The pod network uses libvirt user-mode networking unless --pod-network
names a libvirt network. A multus network attaches to what --network
says (NAME=bridge:BR, NAME=network:NET, NAME=ethernet:TAP or, for SR-IOV,
NAME=hostdev:DDDD:BB:SS.F), else to the libvirt network of the same name.
Dedicated CPU placement pins vCPUs to --dedicated-cpus. ConfigMaps,
Secrets and ServiceAccounts in FILE feed the VMIs' config volumes.

Invalid input prints the problems on stderr and exits with status 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.In, o.Out, o.ErrOut = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			err := o.Run(cmd.Context())
			if errors.Is(err, render.ErrInvalid) {
				return exitError{1}
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.File, "filename", "f", "", `manifest file, "-" for stdin`)
	fl.StringVar(&o.Accel, "accel", domain.TypeQEMU, "domain type: qemu (software emulation) or kvm")
	fl.StringVar(&o.PodNetwork, "pod-network", "", "libvirt network for the pod network (default: user-mode networking)")
	fl.StringArrayVar(&o.Networks, "network", nil, "multus network attachment NAME=TYPE:SOURCE (repeatable)")
	fl.StringVar(&o.DedicatedCPUs, "dedicated-cpus", "", "host CPUs for dedicatedCpuPlacement, e.g. 2-5,8")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}
