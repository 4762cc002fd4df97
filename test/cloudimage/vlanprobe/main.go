package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/network"
	"github.com/virtkit/virtkit/store"
)

// Report is what vlanprobe prints.
type Report struct {
	// Kernel is the release of the kernel under test.
	Kernel string `json:"kernel"`
	// Guests are the attached stand-ins for VMI NICs.
	Guests []Guest `json:"guests"`
	// Checks are the outcomes; Want is what VLANs must give.
	Checks []Check `json:"checks"`
	// BridgeVLANs is `bridge -j vlan show` after the set-up.
	BridgeVLANs json.RawMessage `json:"bridgeVLANs,omitempty"`
}

// Guest is one attached "guest".
type Guest struct {
	Name    string `json:"name"`
	NAD     string `json:"nad"`
	Bridge  string `json:"bridge"`
	Address string `json:"address"`
	MAC     string `json:"mac"`
}

// Check is one observation.
type Check struct {
	Name   string `json:"name"`
	Want   bool   `json:"want"`
	Got    bool   `json:"got"`
	Detail string `json:"detail,omitempty"`
}

const (
	namespace = "vlan"
	parent    = "vkvlan0" // the NADs' bridge: VLAN-filtering, made by the resolver
	subnet    = "10.77.0"
	gateway   = subnet + ".1"
)

// nads are the definitions, by name. Every range is in one subnet.
var nads = []struct{ name, config string }{
	{"v100a", `{"cniVersion":"0.3.1","type":"bridge","bridge":"` + parent + `","vlan":100,"isGateway":true,"preserveDefaultVlan":false,` +
		`"ipam":{"type":"host-local","subnet":"` + subnet + `.0/24","rangeStart":"` + subnet + `.10","rangeEnd":"` + subnet + `.19","gateway":"` + gateway + `"}}`},
	{"v100b", bridgeNAD(100, 20)},
	{"v200a", bridgeNAD(200, 30)},
	{"v200b", bridgeNAD(200, 40)},
	{"flat", bridgeNAD(0, 50)},
	{"trunk", `{"cniVersion":"0.3.1","type":"bridge","bridge":"` + parent + `","vlan":100,"vlanTrunk":[{"minID":101,"maxID":110}]}`},
	{"preserve", `{"cniVersion":"0.3.1","type":"bridge","bridge":"` + parent + `","vlan":100,"preserveDefaultVlan":true}`},
}

func bridgeNAD(vlan, first int) string {
	v := ""
	if vlan > 0 {
		v = fmt.Sprintf(`"vlan":%d,`, vlan)
	}
	return fmt.Sprintf(`{"cniVersion":"0.3.1","type":"bridge","bridge":%q,%s"ipam":{"type":"host-local","subnet":"%s.0/24","rangeStart":"%s.%d","rangeEnd":"%s.%d"}}`,
		parent, v, subnet, subnet, first, subnet, first+9)
}

func main() {
	switch {
	case len(os.Args) == 3 && os.Args[1] == "ping":
		if err := ping(os.Args[2], 3); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	case len(os.Args) != 2 || os.Args[1] != "run":
		fmt.Fprintln(os.Stderr, "usage: vlanprobe run | vlanprobe ping ADDRESS")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, log, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "vlanprobe:", err)
		os.Exit(1)
	}
}

// noDHCP is the node's network.Host without its DHCP servers (the guest
// image has no dnsmasq): the stand-in guests are given their leases
// directly. Every bridge and VLAN call is the Host's own.
type noDHCP struct {
	*network.Host
	served map[string]netip.Addr
}

func (h noDHCP) SetDHCPHost(_ context.Context, _ network.DHCP, mac string, addr netip.Addr) error {
	h.served[mac] = addr
	return nil
}

func run(ctx context.Context, log *slog.Logger, out io.Writer) (err error) {
	rep := &Report{}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		rep.Kernel = strings.TrimSpace(string(b))
	}
	st := store.NewMemory()
	for _, n := range nads {
		nad := &virtkit.NetworkAttachmentDefinition{Spec: virtkit.NetworkAttachmentDefinitionSpec{Config: n.config}}
		nad.Namespace, nad.Name = namespace, n.name
		if err := st.Create(ctx, nad); err != nil {
			return fmt.Errorf("NAD %s: %w", n.name, err)
		}
	}
	host := network.NewHost(network.HostOptions{StateDir: "/run/vlanprobe", Table: "vlanprobe", Logger: log})
	var namespaces []string
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, ns := range namespaces {
			_ = exec.CommandContext(cctx, "ip", "netns", "del", ns).Run()
		}
		err = errors.Join(err, host.Close(cctx))
	}()
	hn := noDHCP{Host: host, served: map[string]netip.Addr{}}
	r, err := network.NewResolver(network.ResolverOptions{Store: st, Node: "vlanprobe",
		PodSubnet: netip.MustParsePrefix("10.250.0.0/24"), Host: hn})
	if err != nil {
		return err
	}

	// The stand-in guests, attached as the node attaches a VMI's NIC.
	for i, g := range []struct{ name, nad string }{
		{"g1", "v100a"}, {"g2", "v100b"}, {"g3", "v200a"}, {"g4", "v200b"}, {"g5", "flat"},
	} {
		req := domain.NetworkRequest{Namespace: namespace, VMIName: g.name, UID: "uid-" + g.name, Interface: "sec",
			Binding: "bridge", Network: "sec", Kind: domain.NetworkMultus, MultusNetworkName: g.nad,
			MAC: fmt.Sprintf("02:00:00:77:00:%02x", i+1)}
		hnet, err := r.ResolveNetwork(ctx, req)
		if err != nil {
			return fmt.Errorf("%s on %s: %w", g.name, g.nad, err)
		}
		vmi := &virtkit.VirtualMachineInstance{}
		vmi.UID = types.UID("uid-" + g.name)
		addrs, err := r.InterfaceAddresses(ctx, vmi)
		if err != nil || len(addrs["sec"]) == 0 {
			return fmt.Errorf("%s: no lease (%v)", g.name, err)
		}
		ns := "vkp-" + g.name
		namespaces = append(namespaces, ns)
		hostEnd := "vkp" + g.name
		for _, c := range [][]string{
			{"netns", "add", ns},
			{"link", "add", hostEnd, "type", "veth", "peer", "name", "eth1", "netns", ns},
			{"link", "set", "dev", hostEnd, "master", hnet.Source},
			{"link", "set", "dev", hostEnd, "up"},
			{"-n", ns, "link", "set", "dev", "eth1", "address", req.MAC},
			{"-n", ns, "addr", "add", addrs["sec"][0] + "/24", "dev", "eth1"},
			{"-n", ns, "link", "set", "dev", "eth1", "up"},
			{"-n", ns, "link", "set", "dev", "lo", "up"},
		} {
			if b, err := exec.CommandContext(ctx, "ip", c...).CombinedOutput(); err != nil {
				return fmt.Errorf("%s: ip %s: %w: %s", g.name, strings.Join(c, " "), err, b)
			}
		}
		rep.Guests = append(rep.Guests, Guest{Name: g.name, NAD: g.nad, Bridge: hnet.Source, Address: addrs["sec"][0], MAC: req.MAC})
	}
	addr := map[string]string{"gateway": gateway}
	for _, g := range rep.Guests {
		addr[g.Name] = g.Address
	}

	self, err := os.Executable()
	if err != nil {
		return err
	}
	// Traffic: within a VLAN it passes (across the parent bridge, between
	// two child bridges), across VLANs and from the default VLAN it does not.
	for _, p := range []struct {
		from, to string
		want     bool
		why      string
	}{
		{"g1", "g2", true, "VLAN 100 to VLAN 100, through the VLAN-filtering parent"},
		{"g2", "g1", true, "VLAN 100 to VLAN 100, through the VLAN-filtering parent"},
		{"g1", "gateway", true, "VLAN 100 to the host's 802.1Q device on VLAN 100"},
		{"g2", "gateway", true, "VLAN 100 to the host's 802.1Q device on VLAN 100"},
		{"g3", "g4", true, "VLAN 200 to VLAN 200"},
		{"g1", "g3", false, "VLAN 100 to VLAN 200"},
		{"g3", "g1", false, "VLAN 200 to VLAN 100"},
		{"g4", "g2", false, "VLAN 200 to VLAN 100"},
		{"g3", "gateway", false, "VLAN 200 to the host's device on VLAN 100"},
		{"g5", "g1", false, "the default VLAN (untagged on the parent) to VLAN 100"},
		{"g1", "g5", false, "VLAN 100 to the default VLAN"},
	} {
		c := Check{Name: fmt.Sprintf("ping %s -> %s (%s): %s", p.from, p.to, addr[p.to], p.why), Want: p.want}
		b, err := exec.CommandContext(ctx, "ip", "netns", "exec", "vkp-"+p.from, self, "ping", addr[p.to]).CombinedOutput()
		c.Got, c.Detail = err == nil, strings.TrimSpace(string(b))
		rep.Checks = append(rep.Checks, c)
	}

	// The bridge's own view: filtering on, access ports untagged on their
	// VLAN only, the gateway an 802.1Q device.
	vf, _ := os.ReadFile("/sys/class/net/" + parent + "/bridge/vlan_filtering")
	rep.Checks = append(rep.Checks, Check{Name: "the NADs' bridge " + parent + " filters VLANs", Want: true,
		Got: strings.TrimSpace(string(vf)) == "1", Detail: strings.TrimSpace(string(vf))})
	if b, err := exec.CommandContext(ctx, "bridge", "-j", "vlan", "show").Output(); err == nil {
		rep.BridgeVLANs = json.RawMessage(b)
		rep.Checks = append(rep.Checks, accessPortChecks(b, rep.Guests)...)
	} else {
		rep.Checks = append(rep.Checks, Check{Name: "bridge -j vlan show", Want: true, Detail: err.Error()})
	}
	legs, err := exec.CommandContext(ctx, "ip", "-d", "-o", "link", "show", "type", "vlan").Output()
	rep.Checks = append(rep.Checks, Check{Name: "the gateway is an 802.1Q device on VLAN 100 of " + parent, Want: true,
		Got:    err == nil && strings.Contains(string(legs), "@"+parent+":") && strings.Contains(string(legs), "vlan protocol 802.1Q id 100 "),
		Detail: strings.TrimSpace(string(legs))})

	// What virtkit does not model is refused, naming the field.
	for _, n := range []struct{ nad, field string }{{"trunk", "spec.config.vlanTrunk"}, {"preserve", "spec.config.preserveDefaultVlan"}} {
		_, err := r.ResolveNetwork(ctx, domain.NetworkRequest{Namespace: namespace, VMIName: "g-" + n.nad, UID: "uid-g-" + n.nad,
			Interface: "sec", Binding: "bridge", Network: "sec", Kind: domain.NetworkMultus, MultusNetworkName: n.nad, MAC: "02:00:00:77:01:01"})
		c := Check{Name: "NAD " + n.nad + " is refused naming " + n.field, Want: true}
		if err != nil {
			c.Got, c.Detail = errors.Is(err, network.ErrUnsupportedCNI) && strings.Contains(err.Error(), n.field), err.Error()
		}
		rep.Checks = append(rep.Checks, c)
	}

	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// accessPortChecks reads `bridge -j vlan show`: every port of parent that
// joins a child bridge carries exactly its VLAN, as PVID and untagged (no
// default VLAN 1: preserveDefaultVlan false), and parent itself carries
// VLAN 100 (tagged, for the host's 802.1Q device).
func accessPortChecks(raw []byte, guests []Guest) []Check {
	var ports []struct {
		IfName string `json:"ifname"`
		VLANs  []struct {
			VLAN  int      `json:"vlan"`
			Flags []string `json:"flags"`
		} `json:"vlans"`
	}
	if err := json.Unmarshal(raw, &ports); err != nil {
		return []Check{{Name: "bridge -j vlan show is JSON", Want: true, Detail: err.Error()}}
	}
	byPort := map[string]string{}
	for _, p := range ports {
		var vs []string
		for _, v := range p.VLANs {
			vs = append(vs, fmt.Sprintf("%d%v", v.VLAN, v.Flags))
		}
		byPort[p.IfName] = strings.Join(vs, " ")
	}
	var out []Check
	seen := map[string]bool{}
	for _, g := range guests {
		vlan := map[string]int{"v100a": 100, "v100b": 100, "v200a": 200, "v200b": 200}[g.NAD]
		if vlan == 0 || seen[g.Bridge] {
			continue
		}
		want := fmt.Sprintf("%d[PVID Egress Untagged]", vlan)
		seen[g.Bridge] = true
		port := "vkv" + g.Bridge // network.Host's name for the parent's end of the access port
		if len(g.Bridge) > 12 {
			port = "vkv" + g.Bridge[len(g.Bridge)-12:]
		}
		out = append(out, Check{Name: fmt.Sprintf("access port %s of NAD %s carries only VLAN %d, as PVID, untagged (no default VLAN 1)", port, g.NAD, vlan), Want: true,
			Got: byPort[port] == want, Detail: byPort[port]})
	}
	self := byPort[parent]
	out = append(out, Check{Name: "the bridge " + parent + " itself carries VLAN 100 for the gateway", Want: true,
		Got: strings.Contains(self, "100["), Detail: self})
	return out
}
