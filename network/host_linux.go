//go:build linux

package network

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// HostOptions configure a [Host].
type HostOptions struct {
	// StateDir holds dnsmasq's configuration, host lists and leases;
	// default /run/virtkit/network.
	StateDir string
	// Table is the name of the nftables table (family inet) virtkit's host
	// rules live in; default "virtkit". It is deleted on Close.
	Table string
	// DNSMasq is the dnsmasq binary; default "dnsmasq" from PATH.
	DNSMasq string
	// Logger receives what the host does; nil discards it.
	Logger *slog.Logger
}

// Host makes the host side of virtkit's networks with the system's own
// tools: Linux bridges, veth pairs and network namespaces through `ip`,
// NAT through `nft` in a table of its own, and DHCP through dnsmasq
// processes it starts (one per served interface, serving only the
// MAC-to-address pairs it is given). It records everything it creates and
// removes it on Close. Methods are safe for concurrent use.
type Host struct {
	opts HostOptions
	log  *slog.Logger

	mu      sync.Mutex
	links   []string // created in the host namespace, removed in reverse
	netns   map[string]*netnsState
	dhcp    map[string]*dhcpServer // by "netns/interface"
	tableUp bool
	closed  bool
}

type netnsState struct{}

// NewHost returns a Host; it changes nothing until asked.
func NewHost(opts HostOptions) *Host {
	if opts.StateDir == "" {
		opts.StateDir = "/run/virtkit/network"
	}
	if opts.Table == "" {
		opts.Table = "virtkit"
	}
	if opts.DNSMasq == "" {
		opts.DNSMasq = "dnsmasq"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Host{opts: opts, log: log, netns: map[string]*netnsState{}, dhcp: map[string]*dhcpServer{}}
}

// ErrHost wraps failures of host commands.
var ErrHost = errors.New("host network")

// ErrUnsupportedHost: the host cannot provide what a network asks for
// (for example a kernel without bridge VLAN filtering).
var ErrUnsupportedHost = errors.New("not supported by this host")

// VLANSupported reports whether the kernel can put Linux bridge ports on
// VLANs, by creating (and removing) a probe bridge of that name.
func VLANSupported(ctx context.Context, probe string) bool {
	if _, err := run(ctx, "", "ip", "link", "add", probe, "type", "bridge", "vlan_filtering", "1"); err != nil {
		return false
	}
	_, _ = run(ctx, "", "ip", "link", "del", "dev", probe)
	return true
}

// run runs a command (inside netns when set) and returns its stdout.
func run(ctx context.Context, netns string, name string, args ...string) (string, error) {
	if netns != "" {
		args = append([]string{"netns", "exec", netns, name}, args...)
		name = "ip"
	}
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s %s: %v: %s", ErrHost, name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

func linkExists(ctx context.Context, netns, name string) bool {
	_, err := run(ctx, netns, "ip", "link", "show", "dev", name)
	return err == nil
}

// ensureLink creates a link with `ip link add NAME ARGS...` unless it
// exists, remembering it for Close when created in the host namespace.
func (h *Host) ensureLink(ctx context.Context, name string, args ...string) (bool, error) {
	if linkExists(ctx, "", name) {
		return false, nil
	}
	if _, err := run(ctx, "", "ip", append([]string{"link", "add", name}, args...)...); err != nil {
		return false, err
	}
	h.mu.Lock()
	h.links = append(h.links, name)
	h.mu.Unlock()
	h.log.Info("created link", "link", name)
	return true, nil
}

// Bridge describes a host bridge.
type Bridge struct {
	// Name of the bridge (at most 15 characters).
	Name string
	// Address, when valid, is put on the bridge: the gateway of the
	// guests attached to it.
	Address netip.Prefix
	// VLANFiltering turns on the bridge's VLAN filtering, for ports on
	// VLANs (see VLANPort).
	VLANFiltering bool
	// Masquerade NATs traffic from Address's subnet that leaves through
	// another interface.
	Masquerade bool
}

// EnsureBridge creates the bridge unless it exists (an existing bridge is
// used as it is, and left in place on Close), puts the address on it and
// brings it up.
func (h *Host) EnsureBridge(ctx context.Context, b Bridge) error {
	if err := checkLinkName(b.Name); err != nil {
		return err
	}
	args := []string{"type", "bridge"}
	if b.VLANFiltering {
		args = append(args, "vlan_filtering", "1")
	}
	if _, err := h.ensureLink(ctx, b.Name, args...); err != nil {
		if b.VLANFiltering && strings.Contains(err.Error(), "not supported") {
			return fmt.Errorf("%w: this kernel has no bridge VLAN filtering (CONFIG_BRIDGE_VLAN_FILTERING), which VLANs on a Linux bridge need: %w", ErrUnsupportedHost, err)
		}
		return err
	}
	if b.Address.IsValid() {
		if err := ensureAddr(ctx, "", b.Name, b.Address); err != nil {
			return err
		}
	}
	if _, err := run(ctx, "", "ip", "link", "set", "dev", b.Name, "up"); err != nil {
		return err
	}
	if b.Masquerade && b.Address.IsValid() {
		// A pod bridge is virtkit's own even when an earlier Host on
		// this state directory (a killed node agent) created it.
		h.own(b.Name)
		return h.masquerade(ctx, b.Name, b.Address.Masked())
	}
	return nil
}

func ensureAddr(ctx context.Context, netns, dev string, p netip.Prefix) error {
	out, err := run(ctx, netns, "ip", "-o", "addr", "show", "dev", dev)
	if err != nil {
		return err
	}
	if strings.Contains(out, " "+p.String()+" ") {
		return nil
	}
	args := []string{"addr", "add", p.String(), "dev", dev}
	if p.Addr().Is6() {
		args = append(args, "nodad") // usable at once; the address is ours alone
	}
	_, err = run(ctx, netns, "ip", args...)
	return err
}

func checkLinkName(n string) error {
	if n == "" || len(n) > 15 || strings.ContainsAny(n, "/ \t\n:") {
		return fmt.Errorf("%w: %q is not a Linux interface name", ErrHost, n)
	}
	return nil
}

// VLANPort joins two bridges: a veth pair with one end on parent as an
// untagged access port of vlan, the other end on child, so every guest
// on child is on that VLAN of parent. The pair is named after child.
func (h *Host) VLANPort(ctx context.Context, parent, child string, vlan int) error {
	a, b := "vkv"+suffix(child), "vkw"+suffix(child)
	if _, err := h.ensureLink(ctx, a, "type", "veth", "peer", "name", b); err != nil {
		return err
	}
	for _, c := range [][]string{
		{"ip", "link", "set", "dev", a, "master", parent},
		{"ip", "link", "set", "dev", b, "master", child},
		{"bridge", "vlan", "del", "dev", a, "vid", "1"},
		{"bridge", "vlan", "add", "dev", a, "vid", fmt.Sprint(vlan), "pvid", "untagged"},
		{"ip", "link", "set", "dev", a, "up"},
		{"ip", "link", "set", "dev", b, "up"},
	} {
		if _, err := run(ctx, "", c[0], c[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// VLANInterface gives the host a leg on one VLAN of a VLAN-filtering
// bridge: a VLAN device name on parent (the bridge's own port carries vlan
// tagged), holding addr. Guests on that VLAN reach the host, its DHCP
// server and its routes through it.
func (h *Host) VLANInterface(ctx context.Context, parent, name string, vlan int, addr netip.Prefix) error {
	if err := checkLinkName(name); err != nil {
		return err
	}
	if _, err := h.ensureLink(ctx, name, "link", parent, "type", "vlan", "id", fmt.Sprint(vlan)); err != nil {
		if strings.Contains(err.Error(), "Unknown device type") || strings.Contains(err.Error(), "not supported") {
			return fmt.Errorf("%w: this kernel has no 802.1Q VLAN devices (CONFIG_VLAN_8021Q, module 8021q): %w", ErrUnsupportedHost, err)
		}
		return err
	}
	if _, err := run(ctx, "", "bridge", "vlan", "add", "dev", parent, "vid", fmt.Sprint(vlan), "self"); err != nil {
		return err
	}
	if addr.IsValid() {
		if err := ensureAddr(ctx, "", name, addr); err != nil {
			return err
		}
	}
	_, err := run(ctx, "", "ip", "link", "set", "dev", name, "up")
	return err
}

// suffix shortens a link name so a 3-letter prefix plus it fits in 15.
func suffix(name string) string {
	if len(name) > 12 {
		return name[len(name)-12:]
	}
	return name
}

// masquerade adds, in the host table, NAT of subnet's traffic routed from
// dev out through any other interface.
func (h *Host) masquerade(ctx context.Context, dev string, subnet netip.Prefix) error {
	if err := h.ensureTable(ctx); err != nil {
		return err
	}
	fam := "ip"
	if subnet.Addr().Is6() {
		fam = "ip6"
	}
	// Only routed traffic of the guests: iifname is the bridge itself for
	// packets the host routes, a bridge port for packets it bridges (which
	// br_netfilter, when loaded, also shows to these hooks), and unset for
	// the host's own.
	rule := fmt.Sprintf("iifname %q %s saddr %s oifname != %q masquerade", dev, fam, subnet, dev)
	out, err := run(ctx, "", "nft", "list", "chain", "inet", h.opts.Table, "postrouting")
	if err != nil {
		return err
	}
	if strings.Contains(out, subnet.String()) {
		return nil
	}
	_, err = run(ctx, "", "nft", "add rule inet "+h.opts.Table+" postrouting "+rule)
	return err
}

func (h *Host) ensureTable(ctx context.Context) error {
	h.mu.Lock()
	up := h.tableUp
	h.mu.Unlock()
	if up {
		return nil
	}
	script := fmt.Sprintf("add table inet %[1]s\nadd chain inet %[1]s postrouting { type nat hook postrouting priority srcnat; }\n", h.opts.Table)
	if err := nftScript(ctx, "", script); err != nil {
		return err
	}
	h.mu.Lock()
	h.tableUp = true
	h.mu.Unlock()
	return nil
}

func nftScript(ctx context.Context, netns, script string) error {
	args := []string{"-f", "-"}
	name := "nft"
	if netns != "" {
		args = append([]string{"netns", "exec", netns, "nft"}, args...)
		name = "ip"
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(script)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: nft: %v: %s", ErrHost, err, strings.TrimSpace(errb.String()))
	}
	return nil
}

// Close stops the DHCP servers and removes every namespace, link and the
// nftables table this Host created. Bridges it found existing stay.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	servers := h.dhcp
	h.dhcp = map[string]*dhcpServer{}
	links := h.links
	h.links = nil
	var namespaces []string
	for n := range h.netns {
		namespaces = append(namespaces, n)
	}
	h.netns = map[string]*netnsState{}
	tableUp := h.tableUp
	h.mu.Unlock()
	var errs []error
	for _, s := range servers {
		s.stop()
	}
	for _, n := range namespaces {
		if _, err := run(ctx, "", "ip", "netns", "del", n); err != nil {
			errs = append(errs, err)
		}
	}
	for i := len(links) - 1; i >= 0; i-- {
		if !linkExists(ctx, "", links[i]) {
			continue // a veth whose peer went, or removed already
		}
		if _, err := run(ctx, "", "ip", "link", "del", "dev", links[i]); err != nil && linkExists(ctx, "", links[i]) {
			errs = append(errs, err)
		}
	}
	if tableUp {
		if _, err := run(ctx, "", "nft", "delete", "table", "inet", h.opts.Table); err != nil {
			errs = append(errs, err)
		}
	}
	_ = os.RemoveAll(h.masqueradeDir())
	return errors.Join(errs...)
}

// dhcpServer is one dnsmasq serving fixed MAC-to-address pairs on one
// interface.
type dhcpServer struct {
	dir    string
	hosts  map[string]netip.Addr // MAC -> IPv4 address
	hosts6 map[string]netip.Addr // MAC -> IPv6 address (DHCPv6)
	cmd    *exec.Cmd
	done   chan struct{}
}

func (s *dhcpServer) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	_ = os.RemoveAll(s.dir)
}

// DHCP describes a DHCP service on one interface.
type DHCP struct {
	// Netns is the network namespace of the interface ("" for the host's).
	Netns string
	// Interface serves the requests; it must hold an address in Subnet.
	Interface string
	// Subnet the leases are in; Router is the default gateway handed out
	// (none when invalid).
	Subnet netip.Prefix
	Router netip.Addr
	// Subnet6, when valid, is also served: DHCPv6 with static leases and
	// router advertisements (managed flag) on Interface, which must hold
	// an address in it; the guests' IPv6 default route is the interface's
	// link-local address, as router advertisements give it.
	Subnet6 netip.Prefix
}

func (d DHCP) key() string { return d.Netns + "/" + d.Interface }

// SetDHCPHost makes the DHCP service of d answer mac with addr (starting
// the service on first use); an invalid addr removes the entry.
func (h *Host) SetDHCPHost(ctx context.Context, d DHCP, mac string, addr netip.Addr) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return fmt.Errorf("%w: closed", ErrHost)
	}
	s := h.dhcp[d.key()]
	if s == nil {
		if !addr.IsValid() {
			return nil
		}
		s = &dhcpServer{dir: filepath.Join(h.opts.StateDir, "dhcp-"+sanitizeName(d.Netns+"-"+d.Interface)),
			hosts: map[string]netip.Addr{}, hosts6: map[string]netip.Addr{}}
	}
	mac = strings.ToLower(mac)
	switch {
	case addr.Is6():
		s.hosts6[mac] = addr
	case addr.IsValid():
		s.hosts[mac] = addr
	default:
		delete(s.hosts, mac)
		delete(s.hosts6, mac)
	}
	if err := s.writeHosts(); err != nil {
		return err
	}
	if s.cmd != nil {
		select {
		case <-s.done: // it died: start a new one below
			h.log.Warn("DHCP server exited; restarting", "interface", d.Interface, "netns", d.Netns)
			s.cmd = nil
		default:
			return s.cmd.Process.Signal(syscall.SIGHUP) // dnsmasq re-reads the hosts file
		}
	}
	if err := h.startDHCP(ctx, d, s); err != nil {
		return err
	}
	h.dhcp[d.key()] = s
	return nil
}

func (s *dhcpServer) writeHosts() error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("%w: %w", ErrHost, err)
	}
	// One line per MAC: its IPv4 address and/or its IPv6 one in brackets.
	var lines []string
	for mac, a := range s.hosts {
		line := mac + "," + a.String()
		if a6, ok := s.hosts6[mac]; ok {
			line += ",[" + a6.String() + "]"
		}
		lines = append(lines, line)
	}
	for mac, a6 := range s.hosts6 {
		if _, ok := s.hosts[mac]; !ok {
			lines = append(lines, mac+",["+a6.String()+"]")
		}
	}
	sort.Strings(lines)
	tmp := filepath.Join(s.dir, "hosts.tmp")
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("%w: %w", ErrHost, err)
	}
	return os.Rename(tmp, filepath.Join(s.dir, "hosts"))
}

func (h *Host) startDHCP(ctx context.Context, d DHCP, s *dhcpServer) error {
	sub := d.Subnet.Masked()
	if !sub.Addr().Is4() {
		return fmt.Errorf("%w: DHCP on %s: only IPv4 subnets are served", ErrHost, d.Interface)
	}
	args := []string{
		"--keep-in-foreground", "--conf-file=/dev/null", "--port=0", "--bind-interfaces",
		"--interface=" + d.Interface, "--except-interface=lo",
		"--dhcp-range=" + sub.Addr().String() + ",static," + prefixMask(sub.Bits()) + ",1h",
		"--dhcp-hostsfile=" + filepath.Join(s.dir, "hosts"),
		"--dhcp-leasefile=" + filepath.Join(s.dir, "leases"),
		"--pid-file=", "--user=root", "--log-facility=-", "--log-dhcp", "--dhcp-authoritative",
	}
	if d.Router.IsValid() {
		args = append(args, "--dhcp-option=option:router,"+d.Router.String())
	} else {
		args = append(args, "--dhcp-option=option:router")
	}
	if s6 := d.Subnet6.Masked(); s6.IsValid() {
		if !s6.Addr().Is6() {
			return fmt.Errorf("%w: DHCPv6 on %s: %s is not an IPv6 subnet", ErrHost, d.Interface, s6)
		}
		args = append(args, "--dhcp-range="+s6.Addr().String()+",static,"+strconv.Itoa(s6.Bits())+",1h", "--enable-ra")
	}
	name := h.opts.DNSMasq
	if d.Netns != "" {
		args = append([]string{"netns", "exec", d.Netns, name}, args...)
		name = "ip"
	}
	// Not tied to ctx: the server lives until Close.
	cmd := exec.Command(name, args...)
	logf, err := os.Create(filepath.Join(s.dir, "dnsmasq.log"))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrHost, err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("%w: start dnsmasq: %w", ErrHost, err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(s.done) }()
	// The pid lets a later Host on this state directory stop a server
	// this process left behind (see ReapStale).
	if err := os.WriteFile(filepath.Join(s.dir, "pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		s.stop()
		s.cmd = nil
		return fmt.Errorf("%w: %w", ErrHost, err)
	}
	// Wait until it serves: a SIGHUP before dnsmasq installs its handler
	// would kill it.
	logPath := filepath.Join(s.dir, "dnsmasq.log")
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		b, _ := os.ReadFile(logPath)
		if bytes.Contains(b, []byte("read "+filepath.Join(s.dir, "hosts"))) {
			h.log.Info("started DHCP", "interface", d.Interface, "netns", d.Netns, "pid", cmd.Process.Pid)
			return nil
		}
		select {
		case <-s.done:
			s.cmd = nil
			return fmt.Errorf("%w: dnsmasq on %s exited: %s", ErrHost, d.Interface, lastLines(b, 3))
		case <-ctx.Done():
			s.stop()
			s.cmd = nil
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}

func prefixMask(bits int) string {
	m := uint32(0xffffffff) << (32 - bits)
	return fmt.Sprintf("%d.%d.%d.%d", m>>24, m>>16&0xff, m>>8&0xff, m&0xff)
}
