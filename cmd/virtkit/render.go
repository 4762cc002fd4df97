package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

// renderFlags are the host facts render cannot know by itself.
type renderFlags struct {
	file, accel   string
	podNetwork    string
	networks      []string // NAME=TYPE:SOURCE
	dedicatedCPUs string   // 2-5,8
}

func newRenderCmd() *cobra.Command {
	var f renderFlags
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRender(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "filename", "f", "", `manifest file, "-" for stdin`)
	fl.StringVar(&f.accel, "accel", domain.TypeQEMU, "domain type: qemu (software emulation) or kvm")
	fl.StringVar(&f.podNetwork, "pod-network", "", "libvirt network for the pod network (default: user-mode networking)")
	fl.StringArrayVar(&f.networks, "network", nil, "multus network attachment NAME=TYPE:SOURCE (repeatable)")
	fl.StringVar(&f.dedicatedCPUs, "dedicated-cpus", "", "host CPUs for dedicatedCpuPlacement, e.g. 2-5,8")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// options turns the flags into builder options.
func (f renderFlags) options() (domain.Options, error) {
	if f.accel != domain.TypeQEMU && f.accel != domain.TypeKVM {
		return domain.Options{}, fmt.Errorf("--accel %q: must be %s or %s", f.accel, domain.TypeQEMU, domain.TypeKVM)
	}
	net := &domain.NetResolver{PodNetwork: f.podNetwork, LibvirtNetworkFallback: true, Multus: map[string]domain.HostNetwork{}}
	for _, n := range f.networks {
		name, att, ok := strings.Cut(n, "=")
		typ, src, ok2 := strings.Cut(att, ":")
		if !ok || !ok2 || name == "" || src == "" {
			return domain.Options{}, fmt.Errorf("--network %q: want NAME=TYPE:SOURCE", n)
		}
		h := domain.HostNetwork{Type: typ, Source: src}
		switch typ {
		case domain.AttachBridge, domain.AttachNetwork, domain.AttachEthernet:
		case domain.AttachHostdev:
			h = domain.HostNetwork{Type: typ, PCIAddress: src}
		default:
			return domain.Options{}, fmt.Errorf("--network %q: type must be bridge, network, ethernet or hostdev", n)
		}
		net.Multus[name] = h
	}
	cpus, err := parseCPUList(f.dedicatedCPUs)
	if err != nil {
		return domain.Options{}, fmt.Errorf("--dedicated-cpus: %w", err)
	}
	return domain.Options{Type: f.accel, NetworkResolver: net, DedicatedCPUs: cpus}, nil
}

// parseCPUList parses "2-5,8" into [2 3 4 5 8].
func parseCPUList(s string) ([]uint, error) {
	var out []uint
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(lo, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CPU list", s)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 16); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a CPU list", s)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, uint(c))
		}
	}
	return out, nil
}

func runRender(stdin io.Reader, stdout, stderr io.Writer, flags renderFlags) error {
	opts, err := flags.options()
	if err != nil {
		return err
	}
	in := stdin
	if flags.file != "-" {
		f, err := os.Open(flags.file)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	objs, err := virtkit.Decode(in)
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(stderr, line)
		}
		return exitError{1}
	}

	type job struct {
		what string
		vmi  *virtkit.VirtualMachineInstance
	}
	var jobs []job
	invalid := false
	for _, obj := range objs {
		gvk, _ := virtkit.GVKOf(obj)
		what := gvk.Kind + " " + renderObjectKey(obj.GetNamespace(), obj.GetName())
		// Reproducible output: a VMI's missing firmware UUID comes from its
		// name, not from a random source.
		key := obj.GetNamespace() + "/" + obj.GetName()
		defaults := virtkit.DefaultOptions{NewUUID: func() types.UID { return virtkit.FirmwareUUIDForVM(key) }}
		defaults.SetDefaults(obj)
		if errs := virtkit.Validate(obj); len(errs) > 0 {
			invalid = true
			for _, e := range errs {
				fmt.Fprintf(stderr, "%s: %v\n", what, e)
			}
			continue
		}
		vmi := vmiOf(obj)
		if vmi == nil && isConfigObject(obj) {
			continue // read by the config volumes of the VMIs
		}
		if vmi == nil {
			fmt.Fprintf(stderr, "%s: skipped, no domain to render\n", what)
			continue
		}
		if vmi != obj {
			// A template is defaulted on the VMI made from it, as the
			// controllers do.
			defaults.SetDefaults(vmi)
		}
		jobs = append(jobs, job{what, vmi})
	}
	if invalid {
		return exitError{1}
	}

	opts.ConfigResolver = renderConfig(objs)
	// Build everything first: a manifest prints completely or not at all.
	var out strings.Builder
	for _, j := range jobs {
		doc, err := domain.BuildXML(j.vmi, opts)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintf(stderr, "%s: %s\n", j.what, line)
			}
			invalid = true
			continue
		}
		fmt.Fprintf(&out, "<!-- %s -->\n%s\n", j.what, doc)
	}
	if invalid {
		return exitError{1}
	}
	_, err = io.WriteString(stdout, out.String())
	return err
}

// vmiOf returns the VMI an object runs: itself, or the VMI a VM or a
// ReplicaSet would create from its template (named after its owner).
func vmiOf(obj virtkit.Object) *virtkit.VirtualMachineInstance {
	var tmpl *virtkit.VirtualMachineInstanceTemplateSpec
	switch t := obj.(type) {
	case *virtkit.VirtualMachineInstance:
		return t
	case *virtkit.VirtualMachine:
		tmpl = t.Spec.Template
	case *virtkit.VirtualMachineInstanceReplicaSet:
		tmpl = t.Spec.Template
	}
	if tmpl == nil {
		return nil
	}
	vmi := &virtkit.VirtualMachineInstance{Spec: *tmpl.Spec.DeepCopy()}
	vmi.APIVersion, vmi.Kind = virtkit.APIVersion, virtkit.KindVirtualMachineInstance
	vmi.Namespace, vmi.Name = obj.GetNamespace(), obj.GetName()
	vmi.Labels = tmpl.ObjectMeta.Labels
	vmi.Annotations = tmpl.ObjectMeta.Annotations
	return vmi
}

func renderObjectKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
