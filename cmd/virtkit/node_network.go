package main

import (
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/network"
)

// nodeNetworkFlags configure a node's pod network (package network).
type nodeNetworkFlags struct {
	enabled    bool
	podRange   string
	nodePrefix int
	subnet     string
	range6     string
	prefix6    int
	subnet6    string
	bridge     string
	mtu        int
	stateDir   string
	table      string
	collect    time.Duration
	// cmd tells which flags were given.
	cmd *cobra.Command
}

const nodeNetworkHelp = `Pod network (--pod-network): every VMI interface on the pod network gets its
own address, leased in the store (IPLease objects) from this node's subnet:
--pod-subnet, or else a --pod-node-prefix share of --pod-range leased for the
node. The bridge binding puts the guest on --pod-bridge and hands it the
address by DHCP; masquerade gives it 10.0.2.2 behind NAT of that address,
forwarding the interface's declared ports. With --pod-range6 (or
--pod-subnet6) the pod network is dual-stack: a masquerade guest also gets
fd10:0:2::2/120 (DHCPv6, router advertisements from fd10:0:2::1) behind NAT66
of its own IPv6 pod address. A libvirt node builds the host side
itself (root; ip, nft and dnsmasq): the bridge holding the subnet's first
address, nftables table --pod-nft-table, dnsmasq state under
--pod-network-state-dir. A simulated node only leases the addresses. Without
--pod-network, pod interfaces use QEMU's user-mode networking.`

func (n *nodeNetworkFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.BoolVar(&n.enabled, "pod-network", false, "give VMIs on the pod network their own addresses (see Pod network)")
	fs.StringVar(&n.podRange, "pod-range", "10.244.0.0/16", "the cluster's pod range; each node leases a subnet of it")
	fs.IntVar(&n.nodePrefix, "pod-node-prefix", 24, "prefix length of each node's subnet of --pod-range")
	fs.StringVar(&n.subnet, "pod-subnet", "", "this node's pod subnet (instead of leasing one of --pod-range)")
	fs.StringVar(&n.range6, "pod-range6", "", "IPv6 pod range (e.g. fd10:244::/56): dual-stack, masquerade guests also get fd10:0:2::2 behind an IPv6 pod address")
	fs.IntVar(&n.prefix6, "pod-node-prefix6", 64, "prefix length of each node's subnet of --pod-range6")
	fs.StringVar(&n.subnet6, "pod-subnet6", "", "this node's IPv6 pod subnet (instead of leasing one of --pod-range6)")
	fs.StringVar(&n.bridge, "pod-bridge", network.DefaultPodBridge, "the pod network's Linux bridge")
	fs.IntVar(&n.mtu, "pod-mtu", 0, "MTU of the guests' pod network NICs (0: 1500)")
	fs.StringVar(&n.stateDir, "pod-network-state-dir", "", "dnsmasq configuration, leases and the records a restarted agent adopts (default /run/virtkit/network/NAME)")
	fs.StringVar(&n.table, "pod-nft-table", "virtkit", "nftables table (family inet) of the pod network's host rules")
	fs.DurationVar(&n.collect, "pod-lease-collect-interval", 30*time.Second, "how often leases of deleted VMIs are released (also on every deletion)")
	cmd.Long += "\n\n" + nodeNetworkHelp
}

// podFlagNames are the flags that need --pod-network.
var podFlagNames = []string{"pod-range", "pod-node-prefix", "pod-subnet", "pod-range6", "pod-node-prefix6", "pod-subnet6", "pod-bridge", "pod-mtu",
	"pod-network-state-dir", "pod-nft-table", "pod-lease-collect-interval"}

// options parses the pod network flags into the node process's pod
// network; nil without --pod-network. A libvirt node builds the host side
// (bridge, NAT, DHCP), which stays when the agent exits: its guests keep
// running, and the next agent adopts them.
func (n *nodeNetworkFlags) options(nodeName, hv string, log *slog.Logger) (*cluster.PodNetwork, error) {
	if !n.enabled {
		for _, name := range podFlagNames {
			if n.cmd != nil && n.cmd.Flags().Changed(name) {
				return nil, fmt.Errorf("--%s: needs --pod-network", name)
			}
		}
		return nil, nil
	}
	p := &cluster.PodNetwork{NodePrefix: n.nodePrefix, NodePrefix6: n.prefix6, Bridge: n.bridge, MTU: n.mtu, CollectInterval: n.collect}
	if n.subnet != "" {
		sub, err := netip.ParsePrefix(n.subnet)
		if err != nil {
			return nil, fmt.Errorf("--pod-subnet %q: %w", n.subnet, err)
		}
		p.Subnet = sub.Masked()
	} else {
		rng, err := netip.ParsePrefix(n.podRange)
		if err != nil {
			return nil, fmt.Errorf("--pod-range %q: %w", n.podRange, err)
		}
		if n.nodePrefix < rng.Bits() || n.nodePrefix > rng.Addr().BitLen()-2 {
			return nil, fmt.Errorf("--pod-node-prefix %d: must be between --pod-range's /%d and /%d", n.nodePrefix, rng.Bits(), rng.Addr().BitLen()-2)
		}
		p.Range = rng.Masked()
	}
	switch {
	case n.subnet6 != "":
		sub6, err := netip.ParsePrefix(n.subnet6)
		if err != nil {
			return nil, fmt.Errorf("--pod-subnet6 %q: %w", n.subnet6, err)
		}
		p.Subnet6 = sub6.Masked()
	case n.range6 != "":
		rng, err := netip.ParsePrefix(n.range6)
		if err != nil || !rng.Addr().Is6() {
			return nil, fmt.Errorf("--pod-range6 %q: not an IPv6 prefix", n.range6)
		}
		p.Range6 = rng.Masked()
	}
	if n.collect <= 0 {
		return nil, fmt.Errorf("--pod-lease-collect-interval: %v is not positive", n.collect)
	}
	if hv == "libvirt" {
		dir := n.stateDir
		if dir == "" {
			// Per node: two agents on one host must not adopt (and stop)
			// each other's DHCP servers.
			dir = filepath.Join("/run/virtkit/network", nodeName)
		}
		host := network.NewHost(network.HostOptions{StateDir: dir, Table: n.table, Logger: log})
		p.Host = func(string) network.HostNetworker { return host }
	}
	log.Info("pod network", "subnet", p.Subnet, "range", p.Range, "subnet6", p.Subnet6, "range6", p.Range6, "bridge", n.bridge, "host", p.Host != nil)
	return p, nil
}
