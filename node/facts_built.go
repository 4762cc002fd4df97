package node

import (
	"strings"

	"libvirt.org/go/libvirtxml"
)

// builtFacts derives a domain's facts from the definition the agent itself
// built, so a freshly defined domain's XML need not be read back from the
// hypervisor and parsed again. ok is false when the hypervisor may fill in
// something the definition left open (an interface without a MAC address,
// no UUID): the facts are then read from the live XML as before.
func builtFacts(dom *libvirtxml.Domain) (domainFacts, bool) {
	if dom == nil || dom.UUID == "" {
		return domainFacts{}, false
	}
	if dom.Devices != nil {
		for _, i := range dom.Devices.Interfaces {
			if i.MAC == nil || i.MAC.Address == "" {
				return domainFacts{}, false
			}
		}
	}
	f := domainFacts{uuid: strings.ToLower(dom.UUID), interfaces: interfacesOf(dom)}
	f.disks, f.disksKnown = diskNames(dom), true
	if dom.Metadata != nil {
		if m, ok := parseMetadata(dom.Metadata.XML); ok {
			f.virtkit, f.vmiUID, f.node = true, m.UID, m.Node
		}
	}
	return f, true
}

// rememberBuilt caches the facts of a domain the agent just defined from
// its own definition, or drops the cached ones when they must be read back.
func (a *Agent) rememberBuilt(domName string, dom *libvirtxml.Domain) {
	f, ok := builtFacts(dom)
	a.mu.Lock()
	defer a.mu.Unlock()
	if ok {
		a.domainFacts[domName] = f
		return
	}
	delete(a.domainFacts, domName)
}
