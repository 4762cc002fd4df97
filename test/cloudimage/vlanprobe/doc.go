// Command vlanprobe runs the node agent's set-up of NetworkAttachmentDefinition
// bridges on VLANs for real, on the kernel it runs on, and reports what
// passes between the attached "guests". The real-stack test
// TestRealVLANBridges builds it, copies it into a Debian cloud guest (whose
// stock kernel has bridge VLAN filtering and 802.1Q, which the test
// machine's kernel may lack) and runs it there through the guest agent.
//
// It resolves multus networks with network.Resolver over a network.Host,
// exactly as the node agent does for a VMI's interface, then stands in for
// each VMI's NIC with a veth pair: one end on the bridge the resolver
// returned, the other in a network namespace of its own with the MAC the
// request named and the address the resolver leased. Every "guest" is in
// one IPv4 subnet, so only the VLANs keep them apart:
//
//	g1  NAD v100a  vlan 100 (isGateway: the host's 802.1Q device holds .1)
//	g2  NAD v100b  vlan 100 (another child bridge on the same parent)
//	g3  NAD v200a  vlan 200
//	g4  NAD v200b  vlan 200
//	g5  NAD flat   no vlan, on the same parent bridge (the default VLAN)
//
// It pings (ICMP echo, from inside each namespace) within VLAN 100 and 200
// and across them, checks the bridge's VLAN table (the access ports carry
// their VLAN untagged and not the default VLAN 1: preserveDefaultVlan
// false), and that definitions with vlanTrunk or preserveDefaultVlan: true
// are refused naming the field. "vlanprobe run" prints a JSON [Report] on
// stdout and exits 0 when it could run the checks (the caller judges them),
// 1 when the set-up failed. "vlanprobe ping ADDR" is the ICMP echo it runs in a
// namespace.
//
// It must run as root on a Linux machine it may change (a throw-away VM):
// it creates bridges, veth pairs and namespaces and removes them at exit.
package main
