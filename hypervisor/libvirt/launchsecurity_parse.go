package libvirt

import (
	"fmt"
	"slices"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor"
)

// launchSecurityFromDomCaps reads what the platform offers confidential
// guests from a domain capabilities document: <features><sev> with its
// C-bit position, address bit reduction and SEV-ES guest slots, <tdx>,
// and the launch security types of <launchSecurity> (sev-snp).
func launchSecurityFromDomCaps(doc string) (hypervisor.LaunchSecurity, error) {
	var out hypervisor.LaunchSecurity
	if doc == "" {
		return out, nil
	}
	var dc libvirtxml.DomainCaps
	if err := dc.Unmarshal(doc); err != nil {
		return out, fmt.Errorf("parse domain capabilities: %w", err)
	}
	f := dc.Features
	if f == nil {
		return out, nil
	}
	if s := f.SEV; s != nil && s.Supported == "yes" {
		out.SEV = true
		out.SEVES = s.MaxESGuests > 0
		out.CBitPos, out.ReducedPhysBits = s.CBitPos, s.ReducedPhysBits
	}
	if t := f.TDX; t != nil && t.Supported == "yes" {
		out.TDX = true
	}
	if ls := f.LaunchSecurity; ls != nil && ls.Supported == "yes" {
		for _, e := range ls.Enums {
			if e.Name == "sectype" && slices.Contains(e.Values, "sev-snp") {
				out.SNP = true
			}
		}
	}
	return out, nil
}
