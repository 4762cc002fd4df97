package domain

import (
	"libvirt.org/go/libvirtxml"
)

// watchdog writes devices.watchdog as KubeVirt's converter does: the model,
// the action and the user's name as the alias.
func (b *builder) watchdog(dom *libvirtxml.Domain) {
	w := b.vmi.Spec.Domain.Devices.Watchdog
	if w == nil {
		return
	}
	if w.I6300ESB == nil {
		b.fail("spec.domain.devices.watchdog", "a watchdog type (i6300esb) is required")
		return
	}
	if b.arch != "" && b.arch != "x86_64" {
		b.unsupported("spec.domain.devices.watchdog.i6300esb", "the i6300esb watchdog is an x86_64 (q35) device")
		return
	}
	dom.Devices.Watchdogs = append(dom.Devices.Watchdogs, libvirtxml.DomainWatchdog{
		Model:  "i6300esb",
		Action: string(w.I6300ESB.Action),
		Alias:  &libvirtxml.DomainAlias{Name: userAliasPrefix + w.Name},
	})
}
