package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

func newRenderCmd() *cobra.Command {
	var file, accel string
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

Invalid input prints the problems on stderr and exits with status 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRender(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), file, accel)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", `manifest file, "-" for stdin`)
	cmd.Flags().StringVar(&accel, "accel", domain.TypeQEMU, "domain type: qemu (software emulation) or kvm")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func runRender(stdin io.Reader, stdout, stderr io.Writer, file, accel string) error {
	if accel != domain.TypeQEMU && accel != domain.TypeKVM {
		return fmt.Errorf("--accel %q: must be %s or %s", accel, domain.TypeQEMU, domain.TypeKVM)
	}
	in := stdin
	if file != "-" {
		f, err := os.Open(file)
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
		virtkit.DefaultOptions{NewUUID: func() types.UID { return virtkit.FirmwareUUIDForVM(key) }}.SetDefaults(obj)
		if errs := virtkit.Validate(obj); len(errs) > 0 {
			invalid = true
			for _, e := range errs {
				fmt.Fprintf(stderr, "%s: %v\n", what, e)
			}
			continue
		}
		vmi := vmiOf(obj)
		if vmi == nil {
			fmt.Fprintf(stderr, "%s: skipped, no domain to render\n", what)
			continue
		}
		jobs = append(jobs, job{what, vmi})
	}
	if invalid {
		return exitError{1}
	}

	opts := domain.Options{Type: accel}
	for _, j := range jobs {
		doc, err := domain.BuildXML(j.vmi, opts)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintf(stderr, "%s: %s\n", j.what, line)
			}
			invalid = true
			continue
		}
		fmt.Fprintf(stdout, "<!-- %s -->\n%s\n", j.what, doc)
	}
	if invalid {
		return exitError{1}
	}
	return nil
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
