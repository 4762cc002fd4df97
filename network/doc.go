// Package network puts guests on real networks: an IPAM kept in the store,
// the node's pod network on a Linux bridge, KubeVirt's bridge and
// masquerade bindings, and secondary networks described by Multus
// NetworkAttachmentDefinitions.
//
// # Pieces
//
//   - [IPAM] leases addresses from a [Pool] as [virtkit.IPLease] objects.
//     A lease's name is derived from pool and address, so the store's
//     create-if-absent is the only lock: node agents on many hosts sharing
//     an etcd store never hand out one address twice. A holder finds its
//     lease again by its owner UID label (a restarted node agent keeps its
//     guests' addresses); [IPAM.Collect] and [IPAM.RunCollector] give back
//     the leases of VMIs that are gone. [IPAM.NodeSubnet] splits a cluster
//     range (10.244.0.0/16) into one subnet per node, leased the same way.
//   - [Host] makes the host side with the system's own tools: `ip` for
//     bridges, veth pairs and network namespaces, `nft` for NAT in a table
//     of its own (family inet, default name "virtkit"), and dnsmasq for
//     DHCP, one process per served interface, answering only the
//     MAC-to-address pairs it is given ("static" ranges). Everything it
//     creates is recorded and removed by [Host.Close].
//   - [Resolver] is a domain.NetworkResolver: the domain builder asks it
//     where each interface goes, and it leases the address, prepares the
//     host and answers with the bridge the guest's NIC joins.
//
// # Bindings
//
// bridge on the pod network: the guest's NIC joins the node's pod bridge
// (vkpod0, holding the subnet's first address as the gateway), and dnsmasq
// on the bridge hands the guest the VMI's leased address for its MAC. The
// node masquerades the subnet's routed traffic leaving through other
// interfaces.
//
// masquerade: each guest gets a network namespace (vk-<id>) holding the
// VMI's pod address on a veth joined to the pod bridge, and 10.0.2.1/24 on
// a veth joined to a per-guest bridge (vkm<id>) where the guest's NIC is.
// dnsmasq in the namespace gives the guest 10.0.2.2/24 with gateway
// 10.0.2.1, KubeVirt's masquerade addressing. nftables in the namespace
// forwards the declared ports of the pod address to 10.0.2.2 (every TCP and
// UDP port when none are declared) and masquerades the guest's own
// traffic. Nothing of 10.0.2.0/24 lives in the host namespace, so any number
// of masquerade guests share those addresses.
//
// A multus network names a NetworkAttachmentDefinition (namespace/name, or a
// name in the VMI's namespace). Its CNI configuration must be of type
// bridge (other types are refused with [ErrUnsupportedCNI], naming the
// type): the guest joins the named bridge (created when missing) and, with
// host-local IPAM, gets an address from the configured range, by DHCP when
// isGateway puts the gateway on the host. With a vlan the guest joins a
// child bridge (vkn<hash>) that is an untagged access port of that VLAN on
// the VLAN-filtering parent, and the host's gateway sits on a VLAN device
// of the parent; kernels without bridge VLAN filtering or 802.1Q refuse
// this with [ErrUnsupportedHost], and the VMI's status names the
// definition's vlan field (the guest never runs untagged). The access port
// carries only its VLAN (preserveDefaultVlan false); trunk ports
// (vlanTrunk) are not supported. The real-stack test TestRealVLANBridges
// (test/cloudimage) runs this set-up in a Debian guest's kernel and checks
// the traffic within and across VLANs.
//
// Why dnsmasq and not a libvirt network with DHCP host entries: a libvirt
// network belongs to one libvirtd, while the bridges here are shared by
// every hypervisor in the host's network namespace (two libvirtd instances
// on one machine, as in the real-stack tests, attach guests to the same
// vkpod0), and survive a libvirtd restart untouched. dnsmasq is what
// libvirt itself runs for its networks; here it is driven directly, one
// static-only instance per interface, re-reading its host list on SIGHUP.
//
// # Live migration
//
// A migrating guest keeps its MAC (it is in the domain XML) and its lease
// (owned by the VMI's UID, not by a node). Each node agent prepares its
// own side: before the target publishes its migration address it runs
// [Resolver.PrepareIncoming] (the node agent does it through
// node.MigrationNetworker), which makes the target's bridges, DHCP entries
// and, for masquerade, its own copy of the guest's namespace with the NAT
// of the same pod address, on standby (its pod-side leg stays off the pod
// bridge, so the address answers only where the guest runs). The target
// records where each interface attaches on it in an annotation of the VMI,
// and the source sends a domain XML attached there. Once the guest runs on
// the target, [Resolver.ActivateIncoming] joins the target's copy to the
// pod bridge and moves the leases to the target; the source removes its
// copy with [Resolver.Release]. Both copies use the same MACs on their
// legs, so neither the guest's nor the pod network's neighbour entries go
// stale. Masquerade pieces are therefore named per node (the namespace
// vk-<id> with id derived from VMI, interface and node), and two node
// agents sharing one network namespace, as the two libvirtd instances of
// the real-stack tests do, never touch each other's copies.
//
// Limits today: a bridge-binding interface stays on a pod bridge of the
// same name and subnet, so two node agents sharing one network namespace
// should share one [Host] (each [Host] runs its own dnsmasq, and two
// authoritative DHCP servers on one bridge would refuse each other's
// clients); and a VMI keeps the address of the node subnet it started in,
// so nodes with their own subnets need that subnet routed to wherever the
// VMI runs (see Past one machine).
//
// # Restarts and crashes
//
// A [Host] records the masquerade copies it makes (with their owners) and
// the pid of every DHCP server it starts in its state directory, and a
// node agent never tears its host networking down when it exits: its
// guests keep running. The next agent's [Resolver.SetUp] on the same state
// directory stops the DHCP servers the previous one left (after a SIGKILL),
// rebuilds the copies of VMIs still on the node (or arriving), removes
// those of VMIs that are gone or moved away, and serves the leases the node
// holds again.
//
// # Past one machine
//
// Across hosts the pod network needs the node subnets to be reachable from
// every node, and, for migration, a VMI address that can move between
// nodes:
//
//   - Routed subnet per node (what [IPAM.NodeSubnet] already hands out):
//     every node routes the other nodes' subnets to them (static routes
//     written by the node agent from the Node objects, or BGP from a
//     routing daemon such as BIRD or FRR). Simple and fast, but an address
//     is tied to its node's subnet: a migrated VMI would need a /32 host
//     route announced from the target (and withdrawn at the source) at
//     switchover, which BGP does well and static routes do poorly.
//   - Overlay: one L2 segment spanning the nodes with a Linux VXLAN device
//     (ip link add vxlan... dstport 4789) enslaved to every node's pod
//     bridge, with the other nodes as forwarding-database entries (or a
//     multicast group). The pod range is then one subnet across the cluster
//     (pool per cluster instead of per node), a migrated guest keeps its
//     address without any route change, and QEMU's announce after
//     switchover moves the MAC in every bridge's forwarding table. The
//     gateway and DHCP become per-node copies of one address (distributed
//     gateway) answering only their own guests. This is the design that
//     suits live migration best; Flannel's VXLAN backend or OVN provide the
//     same as CNI plugins.
//
// Across hosts the target's side is already its own (see Live migration):
// what remains is that the pod address has to be reachable on the target,
// which the overlay gives for free and the routed design gives with a host
// route moved at activation. NetworkAttachmentDefinition bridges are
// usually a physical network (a bridge on a NIC or a VLAN of it) that
// already spans the hosts; only the IPAM must be shared, which the store
// already does.
package network
