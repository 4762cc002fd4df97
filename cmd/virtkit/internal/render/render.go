package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

// ErrInvalid: the manifest is invalid or a domain could not be built; Run
// printed the problems on ErrOut (the command exits with status 1).
var ErrInvalid = errors.New("render: invalid input")

// Options are render's: the manifest, the host facts render cannot know by
// itself, and where to print.
type Options struct {
	// In is what File "-" reads; Out receives the domain XML documents;
	// ErrOut the problems and the skipped objects.
	In          io.Reader
	Out, ErrOut io.Writer
	// File is the manifest, "-" for In.
	File string
	// Accel is the domain type: qemu or kvm.
	Accel string
	// PodNetwork is the libvirt network of the pod network ("": user-mode
	// networking).
	PodNetwork string
	// Networks are multus attachments, NAME=TYPE:SOURCE.
	Networks []string
	// DedicatedCPUs are the host CPUs for dedicatedCpuPlacement (2-5,8).
	DedicatedCPUs string
}

// Complete takes no arguments.
func (o *Options) Complete(args []string) error {
	if len(args) != 0 {
		return fmt.Errorf("unknown command %q for \"virtkit render\"", args[0])
	}
	return nil
}

// Validate checks the host facts (the domain type, the networks, the CPU
// list).
func (o *Options) Validate() error {
	_, err := o.options()
	return err
}

// options turns the host facts into builder options.
func (o *Options) options() (domain.Options, error) {
	if o.Accel != domain.TypeQEMU && o.Accel != domain.TypeKVM {
		return domain.Options{}, fmt.Errorf("--accel %q: must be %s or %s", o.Accel, domain.TypeQEMU, domain.TypeKVM)
	}
	net := &domain.NetResolver{PodNetwork: o.PodNetwork, LibvirtNetworkFallback: true, Multus: map[string]domain.HostNetwork{}}
	for _, n := range o.Networks {
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
	cpus, err := parseCPUList(o.DedicatedCPUs)
	if err != nil {
		return domain.Options{}, fmt.Errorf("--dedicated-cpus: %w", err)
	}
	return domain.Options{Type: o.Accel, NetworkResolver: net, DedicatedCPUs: cpus}, nil
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

// Run prints one domain XML document per VMI, VM template and ReplicaSet
// template of the manifest, in file order; ErrInvalid, with nothing on
// Out, when any is invalid.
func (o *Options) Run(_ context.Context) error {
	stdout, stderr := o.Out, o.ErrOut
	opts, err := o.options()
	if err != nil {
		return err
	}
	in := o.In
	if o.File != "-" {
		f, err := os.Open(o.File)
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
		return ErrInvalid
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
		return ErrInvalid
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
		return ErrInvalid
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
