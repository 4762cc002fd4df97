package domain

import (
	"libvirt.org/go/libvirtxml"
)

// LaunchSecurity is what a node's platform offers confidential guests,
// as its hypervisor's domain capabilities report it (or, where the
// hypervisor reports none, as the node is labelled). The zero value
// offers nothing: a VMI with spec.domain.launchSecurity is refused with
// an error wrapping ErrUnsupported that names the field.
type LaunchSecurity struct {
	// SEV: AMD Secure Encrypted Virtualization; SEVES its encrypted
	// state (SEV-ES); SNP: SEV Secure Nested Paging; TDX: Intel Trust
	// Domain Extensions.
	SEV, SEVES, SNP, TDX bool
	// CBitPos and ReducedPhysBits are the platform's C-bit position and
	// physical address bit reduction (0: unknown; libvirt fills them in).
	CBitPos, ReducedPhysBits uint
}

// SEV guest policy bits (AMD SEV API): debugging off, encrypted state;
// SNP guest policy bits (AMD SEV-SNP ABI): SMT allowed and the bit the
// ABI reserves as 1.
const (
	sevPolicyNoDebug        = 1 << 0
	sevPolicyEncryptedState = 1 << 2
	snpPolicySMT            = 1 << 16
	snpPolicyReserved       = 1 << 17
)

// launchSecurity writes <launchSecurity> for a confidential VMI, as
// KubeVirt's converter does on amd64: SEV with its policy (no debugging,
// plus encrypted state when asked) and the guest owner's certificate;
// SNP with the policy that allows SMT; TDX with the default quote
// generation service. The platform's C-bit position and address bit
// reduction are written when the node knows them. Virtio devices then
// reach guest memory through the IOMMU (SEV and SNP), SNP and TDX guests
// boot stateless firmware, and TDX turns the PMU off. A kind the node's
// platform does not offer is refused naming the field.
func (b *builder) launchSecurity(dom *libvirtxml.Domain) {
	ls := b.vmi.Spec.Domain.LaunchSecurity
	if ls == nil {
		return
	}
	caps := b.opts.LaunchSecurity
	if b.arch != "x86_64" {
		b.unsupported("spec.domain.launchSecurity", "the domain builder writes launch security for x86_64 guests only")
		return
	}
	var bits func(*uint, *uint)
	switch {
	case ls.SEV != nil:
		sev := ls.SEV
		es := sev.Policy != nil && sev.Policy.EncryptedState != nil && *sev.Policy.EncryptedState
		switch {
		case !caps.SEV:
			b.unsupported("spec.domain.launchSecurity.sev", "this node's platform offers no AMD SEV")
			return
		case es && !caps.SEVES:
			b.unsupported("spec.domain.launchSecurity.sev.policy.encryptedState", "this node's platform offers no AMD SEV-ES")
			return
		case sev.Attestation != nil:
			b.unsupported("spec.domain.launchSecurity.sev.attestation", "this node does not serve SEV attestation (launch measurement, secret injection)")
			return
		case sev.Session != "":
			b.unsupported("spec.domain.launchSecurity.sev.session", "the node's libvirt XML library cannot write a launch session blob")
			return
		}
		policy := uint(sevPolicyNoDebug)
		if es {
			policy |= sevPolicyEncryptedState
		}
		x := &libvirtxml.DomainLaunchSecuritySEV{Policy: &policy, DHCert: sev.DHCert}
		dom.LaunchSecurity = &libvirtxml.DomainLaunchSecurity{SEV: x}
		bits = func(c, r *uint) { x.CBitPos, x.ReducedPhysBits = c, r }
	case ls.SNP != nil:
		if !caps.SNP {
			b.unsupported("spec.domain.launchSecurity.snp", "this node's platform offers no AMD SEV-SNP")
			return
		}
		policy := uint64(snpPolicySMT | snpPolicyReserved)
		x := &libvirtxml.DomainLaunchSecuritySEVSNP{Policy: &policy}
		dom.LaunchSecurity = &libvirtxml.DomainLaunchSecurity{SEVSNP: x}
		bits = func(c, r *uint) { x.CBitPos, x.ReducedPhysBits = c, r }
	case ls.TDX != nil:
		if !caps.TDX {
			b.unsupported("spec.domain.launchSecurity.tdx", "this node's platform offers no Intel TDX")
			return
		}
		dom.LaunchSecurity = &libvirtxml.DomainLaunchSecurity{TDX: &libvirtxml.DomainLaunchSecurityTDX{
			QuoteGenerationService: &libvirtxml.DomainLaunchSecurityTDXQGS{},
		}}
		if dom.Features == nil {
			dom.Features = &libvirtxml.DomainFeatureList{}
		}
		dom.Features.PMU = &libvirtxml.DomainFeatureState{State: "off"}
	default:
		return
	}
	if bits != nil && caps.CBitPos != 0 && caps.ReducedPhysBits != 0 {
		bits(uintp(caps.CBitPos), uintp(caps.ReducedPhysBits))
	}
	if ls.SNP != nil || ls.TDX != nil {
		statelessFirmware(dom)
	}
	if ls.SEV != nil || ls.SNP != nil {
		virtioThroughIOMMU(dom)
	}
}

// statelessFirmware boots an SNP or TDX guest's EFI firmware as a
// read-only image without a variable store.
func statelessFirmware(dom *libvirtxml.Domain) {
	if dom.OS == nil || dom.OS.Loader == nil {
		return
	}
	dom.OS.Loader.Type = "rom"
	dom.OS.NVRam = nil
}

// virtioThroughIOMMU turns on the IOMMU platform flag of the virtio disks,
// interfaces, controllers, RNG and balloon of an SEV or SNP guest: its
// memory is encrypted, so devices reach it through bounce buffers.
func virtioThroughIOMMU(dom *libvirtxml.Domain) {
	d := dom.Devices
	for i := range d.Disks {
		disk := &d.Disks[i]
		if disk.Target == nil || disk.Target.Bus != "virtio" {
			continue
		}
		if disk.Driver == nil {
			disk.Driver = &libvirtxml.DomainDiskDriver{}
		}
		disk.Driver.IOMMU = "on"
	}
	for i := range d.Interfaces {
		iface := &d.Interfaces[i]
		if iface.Model == nil || !isVirtioModel(iface.Model.Type) {
			continue
		}
		if iface.Driver == nil {
			iface.Driver = &libvirtxml.DomainInterfaceDriver{}
		}
		iface.Driver.IOMMU = "on"
	}
	for i := range d.Controllers {
		c := &d.Controllers[i]
		switch {
		case c.Type == "virtio-serial", c.Type == "scsi" && isVirtioModel(c.Model):
		default:
			continue
		}
		if c.Driver == nil {
			c.Driver = &libvirtxml.DomainControllerDriver{}
		}
		c.Driver.IOMMU = "on"
	}
	for i := range d.RNGs {
		r := &d.RNGs[i]
		if !isVirtioModel(r.Model) {
			continue
		}
		if r.Driver == nil {
			r.Driver = &libvirtxml.DomainRNGDriver{}
		}
		r.Driver.IOMMU = "on"
	}
	if mb := d.MemBalloon; mb != nil && isVirtioModel(mb.Model) {
		if mb.Driver == nil {
			mb.Driver = &libvirtxml.DomainMemBalloonDriver{}
		}
		mb.Driver.IOMMU = "on"
	}
}

func isVirtioModel(m string) bool {
	switch m {
	case "virtio", "virtio-transitional", "virtio-non-transitional", "virtio-scsi":
		return true
	}
	return false
}
