package libvirt

import (
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor"
)

// machineTypesFromCaps reads the machine types of the host's architecture
// from libvirt capabilities XML (every guest architecture when the host's
// is not given), with QEMU's deprecation marks.
func machineTypesFromCaps(capsXML string) ([]hypervisor.MachineType, error) {
	var caps libvirtxml.Caps
	if err := caps.Unmarshal(capsXML); err != nil {
		return nil, err
	}
	arch := ""
	if caps.Host.CPU != nil {
		arch = caps.Host.CPU.Arch
	}
	var out []hypervisor.MachineType
	seen := map[string]bool{}
	add := func(ms []libvirtxml.CapsGuestMachine) {
		for _, m := range ms {
			if seen[m.Name] {
				continue
			}
			seen[m.Name] = true
			out = append(out, hypervisor.MachineType{Name: m.Name, Canonical: m.Canonical, Deprecated: m.Deprecated == "yes"})
		}
	}
	for _, g := range caps.Guests {
		if arch != "" && g.Arch.Name != arch {
			continue
		}
		add(g.Arch.Machines)
		for _, d := range g.Arch.Domains {
			add(d.Machines)
		}
	}
	return out, nil
}
