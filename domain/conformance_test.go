package domain_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

const examplesDir = "../testdata/kubevirt-examples"

// conformanceOptions supply the host facts the examples need: the multus
// networks they name and host CPUs for dedicated placement.
var conformanceOptions = domain.Options{
	HostPaths:     domain.HostPathPolicy{Allow: []string{"/var/data"}}, // vmi-host-disk
	DedicatedCPUs: []uint{0, 1, 2, 3, 4, 5, 6, 7},
	NetworkResolver: &domain.NetResolver{Multus: map[string]domain.HostNetwork{
		"ptp-conf":            {Type: domain.AttachBridge, Source: "br-ptp"},
		"sriov/sriov-network": {Type: domain.AttachHostdev, PCIAddress: "0000:3b:02.1"},
	}},
}

// TestConformanceExamples renders every KubeVirt example the object model
// accepts (decode, defaults, validation) and checks the document against
// libvirt's schema and a libvirtxml round trip. Examples the model rejects
// are skipped with the model's reason.
func TestConformanceExamples(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if len(files) == 0 {
		t.Fatalf("KubeVirt examples not found in %s: they are vendored in the repository", examplesDir)
	}
	rendered := 0
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			objs, err := virtkit.DecodeBytes(data)
			if err != nil {
				t.Skipf("rejected by the object model: %v", err)
			}
			for _, obj := range objs {
				virtkit.DefaultOptions{NewUUID: func() types.UID { return "4a7e1c2b-7f1d-4c55-a1f0-9d2b3c4e5f60" }}.SetDefaults(obj)
				if errs := virtkit.Validate(obj); len(errs) > 0 {
					t.Skipf("rejected by validation: %v", errs.ToAggregate())
				}
				vmi := templateVMI(obj)
				if vmi == nil {
					continue // migrations and policies have no domain
				}
				doc, err := domain.BuildXML(vmi, conformanceOptions)
				if errors.Is(err, domain.ErrUnsupported) {
					// A host device this node does not permit, say.
					t.Skipf("refused by the domain builder: %v", err)
				}
				require.NoError(t, err)
				var back libvirtxml.Domain
				require.NoError(t, back.Unmarshal(doc))
				again, err := back.Marshal()
				require.NoError(t, err)
				assert.Equal(t, doc, again)
				// Counted before the schema check, which skips (with a
				// message naming the Debian package) where
				// virt-xml-validate is missing.
				rendered++
				validateXML(t, doc)
			}
		})
	}
	// Guard against a run that passes by skipping everything.
	if !t.Skipped() && len(files) > 0 {
		assert.GreaterOrEqual(t, rendered, 20, "rendered examples")
	}
}

// templateVMI is the VMI an object runs: itself, or the one a VM or
// ReplicaSet creates from its template.
func templateVMI(obj virtkit.Object) *virtkit.VirtualMachineInstance {
	var tmpl *virtkit.VirtualMachineInstanceTemplateSpec
	switch o := obj.(type) {
	case *virtkit.VirtualMachineInstance:
		return o
	case *virtkit.VirtualMachine:
		tmpl = o.Spec.Template
	case *virtkit.VirtualMachineInstanceReplicaSet:
		tmpl = o.Spec.Template
	}
	if tmpl == nil {
		return nil
	}
	vmi := &virtkit.VirtualMachineInstance{Spec: tmpl.Spec}
	vmi.Namespace, vmi.Name, vmi.Labels = obj.GetNamespace(), obj.GetName(), tmpl.ObjectMeta.Labels
	return vmi
}
