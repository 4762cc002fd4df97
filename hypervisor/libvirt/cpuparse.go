package libvirt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor"
)

// maxCapsXML bounds the capabilities documents parsed here (real ones are
// 10-60 KiB).
const maxCapsXML = 4 << 20

// parseHostCPU reads the host's CPU from libvirt's host capabilities
// (capsXML: the exact CPU, for the signature) and domain capabilities
// (domCapsXML, may be empty: the model host-model expands to and the usable
// named models). Without a host model from either it returns an error
// matching hypervisor.ErrNotSupported.
func parseHostCPU(capsXML, domCapsXML string) (hypervisor.HostCPU, error) {
	var out hypervisor.HostCPU
	if len(capsXML) > maxCapsXML || len(domCapsXML) > maxCapsXML {
		return out, fmt.Errorf("%w: capabilities document over %d bytes", hypervisor.ErrInvalidArgument, maxCapsXML)
	}
	var caps libvirtxml.Caps
	if err := caps.Unmarshal(capsXML); err != nil {
		return out, fmt.Errorf("parse capabilities: %w", err)
	}
	if cpu := caps.Host.CPU; cpu != nil {
		out.HostModel, out.Vendor = cpu.Model, cpu.Vendor
		features := make([]string, 0, len(cpu.FeatureFlags))
		for _, f := range cpu.FeatureFlags {
			features = append(features, f.Name)
		}
		slices.Sort(features)
		id := []string{cpu.Arch, cpu.Vendor, cpu.Model}
		if s := cpu.Signature; s != nil {
			id = append(id, fmt.Sprintf("family=%d,model=%d,stepping=%d", s.Family, s.Model, s.Stepping))
		}
		if cpu.Model != "" {
			sum := sha256.Sum256([]byte(strings.Join(append(id, strings.Join(features, ",")), "\x00")))
			out.Signature = hex.EncodeToString(sum[:8])
		}
	}
	if domCapsXML != "" {
		var dc libvirtxml.DomainCaps
		if err := dc.Unmarshal(domCapsXML); err != nil {
			return out, fmt.Errorf("parse domain capabilities: %w", err)
		}
		if dc.CPU != nil {
			for _, m := range dc.CPU.Modes {
				switch {
				case m.Supported == "no":
				case m.Name == "host-model" && len(m.Models) > 0:
					out.HostModel = m.Models[0].Name
					if m.Vendor != "" {
						out.Vendor = m.Vendor
					}
				case m.Name == "custom":
					for _, mod := range m.Models {
						if mod.Usable == "yes" && mod.Name != "" {
							out.UsableModels = append(out.UsableModels, mod.Name)
						}
					}
				}
			}
		}
	}
	if out.HostModel == "" {
		return hypervisor.HostCPU{}, fmt.Errorf("%w: host CPU model: neither the host nor the domain capabilities name one", hypervisor.ErrNotSupported)
	}
	if !slices.Contains(out.UsableModels, out.HostModel) {
		out.UsableModels = append(out.UsableModels, out.HostModel)
	}
	slices.Sort(out.UsableModels)
	out.UsableModels = slices.Compact(out.UsableModels)
	return out, nil
}
