package node

import (
	"context"
	"encoding/xml"
	"errors"
	"reflect"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/hypervisor"
)

// aliasPrefix marks user-named devices in domain XML (KubeVirt's "ua-").
const aliasPrefix = "ua-"

// updateRunningStatus writes what the host knows about an active domain
// into the VMI's status, and stores it if anything changed.
func (a *Agent) updateRunningStatus(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string, info hypervisor.DomainInfo) error {
	before := vmi.Status.DeepCopy()
	now := a.now()
	phase, ok := phaseFor(info.State, info.Reason, acpiEnabled(vmi))
	if !ok {
		return nil
	}
	vmi.SetPhase(phase, now)
	vmi.SetActivePod(a.podUID(vmi), a.opts.NodeName)
	a.ensureDownwardMetrics(ctx, vmi, domName)

	paused := pausedReason(info.State, info.Reason)
	if paused != "" {
		virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{
			Type: virtkit.VirtualMachineInstancePaused, Status: virtkit.ConditionTrue, Reason: paused,
			Message: "VMI was paused",
		}, now)
	} else {
		virtkit.RemoveCondition(&vmi.Status.Conditions, virtkit.VirtualMachineInstancePaused)
	}
	if phase == virtkit.Running && paused == "" {
		virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{
			Type: virtkit.VirtualMachineInstanceReady, Status: virtkit.ConditionTrue,
		}, now)
	} else {
		virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{
			Type: virtkit.VirtualMachineInstanceReady, Status: virtkit.ConditionFalse, Reason: virtkit.GuestNotRunningReason,
			Message: "Guest VM is not reported as running",
		}, now)
	}
	migratable := liveMigratable(vmi)
	if migratable.Status == virtkit.ConditionTrue {
		migratable = a.dataVolumesMigratable(ctx, vmi, migratable)
	}
	virtkit.SetCondition(&vmi.Status.Conditions, migratable, now)

	var guest GuestInfo
	haveGuest := false
	if a.opts.GuestInfo != nil {
		// Like KubeVirt's poller, follow the agent from its connect event:
		// polling a channel nobody listens on only burns the deadline.
		if info.State == hypervisor.StateRunning && info.Agent == hypervisor.ChannelConnected {
			followGuest(ctx, a.opts.GuestInfo, domName)
		} else if info.Agent == hypervisor.ChannelDisconnected {
			a.opts.GuestInfo.Forget(domName)
		}
		guest, haveGuest = a.opts.GuestInfo.Info(domName)
	}
	agentUp := info.Agent == hypervisor.ChannelConnected
	if a.opts.GuestInfo != nil {
		// With a poller the agent must also answer, not only be plugged in.
		agentUp = agentUp && haveGuest && guest.Connected
	}
	a.noteAgentConnect(ctx, vmi, agentUp, now.Time)
	if agentUp {
		virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{
			Type: virtkit.VirtualMachineInstanceAgentConnected, Status: virtkit.ConditionTrue,
		}, now)
	} else {
		virtkit.RemoveCondition(&vmi.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected)
	}
	if agentUp && guest.UnsupportedReason != "" {
		virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{
			Type: virtkit.VirtualMachineInstanceUnsupportedAgent, Status: virtkit.ConditionTrue,
			Reason: guestagent.Sanitize(guest.UnsupportedReason, 512),
		}, now)
	} else {
		virtkit.RemoveCondition(&vmi.Status.Conditions, virtkit.VirtualMachineInstanceUnsupportedAgent)
	}
	if haveGuest && guest.OS.Name != "" && guest.OS != vmi.Status.GuestOSInfo {
		vmi.Status.GuestOSInfo = guest.OS
	}
	if haveGuest {
		vmi.Status.FSFreezeStatus = guest.FSFreezeStatus
	}

	if f, err := a.facts(ctx, domName, info.UUID); err == nil {
		domIfaces := f.interfaces
		var gifs []GuestInterface
		if haveGuest && agentUp {
			gifs = guest.Interfaces
		}
		vmi.Status.Interfaces = mergeInterfaces(vmi, domIfaces, gifs)
		a.applyLeasedAddresses(ctx, vmi)
	}

	if vmi.Spec.Domain.Machine != nil {
		vmi.Status.Machine = &virtkit.Machine{Type: vmi.Spec.Domain.Machine.Type}
	}
	a.resourceStatus(ctx, vmi, domName, info)
	if reflect.DeepEqual(before, &vmi.Status) {
		return nil
	}
	if err := a.opts.Store.UpdateStatus(ctx, vmi); err != nil {
		return err
	}
	a.recordPhaseChange(ctx, vmi, before.Phase)
	return nil
}

// actOnRequests honours the pause and soft-reboot requests recorded on the
// VMI (see virtkit.PauseRequestAnnotation).
func (a *Agent) actOnRequests(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string, info *hypervisor.DomainInfo) error {
	hv := a.opts.Hypervisor
	wantPaused := vmi.Annotations[virtkit.PauseRequestAnnotation] == "true"
	switch {
	case wantPaused && info.State == hypervisor.StateRunning:
		if err := hv.Pause(ctx, domName); err != nil && !errors.Is(err, hypervisor.ErrInvalidState) {
			return err
		}
		a.log.Info("paused guest", "domain", domName)
		a.event(ctx, vmi, virtkit.EventTypeNormal, virtkit.EventReasonPaused, "Pause", "VirtualMachineInstance paused")
	case !wantPaused && info.State == hypervisor.StatePaused && info.Reason == hypervisor.ReasonUser:
		if err := hv.Resume(ctx, domName); err != nil && !errors.Is(err, hypervisor.ErrInvalidState) {
			return err
		}
		a.log.Info("resumed guest", "domain", domName)
		a.event(ctx, vmi, virtkit.EventTypeNormal, virtkit.EventReasonUnpaused, "Unpause", "VirtualMachineInstance unpaused")
	}
	if _, reboot := vmi.Annotations[virtkit.SoftRebootRequestAnnotation]; reboot && info.State == hypervisor.StateRunning {
		if err := a.softReboot(ctx, domName); err != nil {
			return err
		}
		delete(vmi.Annotations, virtkit.SoftRebootRequestAnnotation)
		if err := a.opts.Store.Update(ctx, vmi); err != nil {
			return err
		}
		a.log.Info("soft-rebooted guest", "domain", domName)
		a.event(ctx, vmi, virtkit.EventTypeNormal, virtkit.EventReasonSoftRebooted, "SoftReboot", "VirtualMachineInstance soft rebooted")
	}
	fresh, err := hv.Info(ctx, domName)
	if err != nil {
		return err
	}
	*info = fresh
	return nil
}

// softReboot asks the guest to reboot. The backend picks the way (libvirt:
// the guest agent when connected, else ACPI), since a raw guest-shutdown
// through the agent passthrough gets no reply to wait for.
func (a *Agent) softReboot(ctx context.Context, domName string) error {
	return a.opts.Hypervisor.Reboot(ctx, domName)
}

// domainFacts are what the agent reads from a domain's XML. They change
// only when the domain is (re)defined, which gives it a new UUID or goes
// through the agent, so they are parsed once per domain definition rather
// than on every status refresh.
type domainFacts struct {
	uuid string
	// virtkit is true when the domain carries the builder's kubevirt
	// metadata element; vmiUID and node are read from it.
	virtkit    bool
	vmiUID     string
	node       string
	interfaces []domainInterface
	// disks names the disks with a user alias (domain.DiskName) the
	// domain holds, sorted; disksKnown is false when they were not read.
	// Unlike the rest they change without a new definition (a hot-plug
	// or hot-unplug), so the agent updates them whenever it changes the
	// domain's disks or reads them live.
	disks      []string
	disksKnown bool
}

// facts returns the cached facts of a domain, reading and parsing its XML
// when the domain's UUID differs from the cached one.
func (a *Agent) facts(ctx context.Context, domName, uuid string) (domainFacts, error) {
	a.mu.Lock()
	f, ok := a.domainFacts[domName]
	a.mu.Unlock()
	if ok && uuid != "" && f.uuid == uuid {
		return f, nil
	}
	x, err := a.opts.Hypervisor.XML(ctx, domName)
	if err != nil {
		return domainFacts{}, err
	}
	if len(x) > maxDomainXML {
		// Not a document the builder wrote.
		return domainFacts{uuid: uuid}, nil
	}
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(x); err != nil {
		return domainFacts{}, err
	}
	f = domainFacts{uuid: dom.UUID, interfaces: interfacesOf(&dom)}
	f.disks, f.disksKnown = diskNames(&dom), true
	if dom.Metadata != nil {
		if m, ok := parseMetadata(dom.Metadata.XML); ok {
			f.virtkit, f.vmiUID, f.node = true, m.UID, m.Node
		}
	}
	a.mu.Lock()
	a.domainFacts[domName] = f
	a.mu.Unlock()
	return f, nil
}

// maxDomainXML bounds the domain XML the agent parses; a domain the agent
// built is a few kilobytes.
const maxDomainXML = 4 << 20

// kubevirtMetadata is the part of the builder's <kubevirt
// xmlns="http://kubevirt.io"> metadata element the agent reads.
type kubevirtMetadata struct {
	UID  string `xml:"uid"`
	Node string `xml:"node"`
}

// parseMetadata finds the kubevirt element (in its namespace) among the
// domain's metadata elements.
func parseMetadata(inner string) (kubevirtMetadata, bool) {
	dec := xml.NewDecoder(strings.NewReader(inner))
	for {
		tok, err := dec.Token()
		if err != nil {
			return kubevirtMetadata{}, false
		}
		t, ok := tok.(xml.StartElement)
		if !ok || t.Name.Local != "kubevirt" || t.Name.Space != domain.KubeVirtMetadataNamespace {
			continue
		}
		var m kubevirtMetadata
		if err := dec.DecodeElement(&m, &t); err != nil {
			return kubevirtMetadata{}, false
		}
		m.UID, m.Node = strings.TrimSpace(m.UID), strings.TrimSpace(m.Node)
		return m, true
	}
}

// domainInterface is a NIC as the live domain XML describes it.
type domainInterface struct {
	Name   string // the VMI interface name (alias without "ua-")
	MAC    string
	Queues uint
	Up     bool
}

func interfacesOf(dom *libvirtxml.Domain) []domainInterface {
	if dom.Devices == nil {
		return nil
	}
	var out []domainInterface
	for _, i := range dom.Devices.Interfaces {
		di := domainInterface{Up: true}
		if i.Alias != nil {
			di.Name = strings.TrimPrefix(i.Alias.Name, aliasPrefix)
		}
		if i.MAC != nil {
			di.MAC = strings.ToLower(i.MAC.Address)
		}
		if i.Driver != nil {
			di.Queues = i.Driver.Queues
		}
		if i.Link != nil && i.Link.State == "down" {
			di.Up = false
		}
		out = append(out, di)
	}
	return out
}

// mergeInterfaces builds status.interfaces the way KubeVirt does: domain
// NICs first (infoSource "domain"), guest-agent data merged in by MAC
// ("domain, guest-agent"), NICs only the guest knows appended (at most 10,
// "guest-agent"), and multus networks marked "multus-status".
func mergeInterfaces(vmi *virtkit.VirtualMachineInstance, dom []domainInterface, guest []GuestInterface) []virtkit.VirtualMachineInstanceNetworkInterface {
	multus := map[string]bool{}
	for _, n := range vmi.Spec.Networks {
		if n.Multus != nil {
			multus[n.Name] = true
		}
	}
	byMAC := map[string]GuestInterface{}
	for _, g := range guest {
		if g.Name == "lo" || g.MAC == "" {
			continue
		}
		byMAC[strings.ToLower(g.MAC)] = g
	}
	used := map[string]bool{}
	var out []virtkit.VirtualMachineInstanceNetworkInterface
	for _, d := range dom {
		st := virtkit.VirtualMachineInstanceNetworkInterface{
			Name: d.Name, MAC: d.MAC, InfoSource: virtkit.InfoSourceDomain, QueueCount: int32(max(d.Queues, 1)),
			LinkState: "up",
		}
		if !d.Up {
			st.LinkState = "down"
		}
		if g, ok := byMAC[d.MAC]; ok {
			used[d.MAC] = true
			st.InterfaceName = g.Name
			st.IPs = append([]string(nil), g.IPs...)
			if len(st.IPs) > 0 {
				st.IP = primaryIP(st.IPs)
			}
			st.InfoSource = virtkit.InfoSourceDomainAndGA
		}
		if multus[d.Name] {
			st.InfoSource += ", " + virtkit.InfoSourceMultusStatus
		}
		out = append(out, st)
	}
	extra := 0
	for _, g := range guest {
		mac := strings.ToLower(g.MAC)
		if g.Name == "lo" || used[mac] || extra >= 10 {
			continue
		}
		extra++
		st := virtkit.VirtualMachineInstanceNetworkInterface{
			InterfaceName: g.Name, MAC: mac, IPs: append([]string(nil), g.IPs...), InfoSource: virtkit.InfoSourceGuestAgent,
		}
		if len(st.IPs) > 0 {
			st.IP = primaryIP(st.IPs)
		}
		out = append(out, st)
	}
	return out
}

// primaryIP is the first IPv4 address, else the first address.
func primaryIP(ips []string) string {
	for _, ip := range ips {
		if !strings.Contains(ip, ":") {
			return ip
		}
	}
	return ips[0]
}
