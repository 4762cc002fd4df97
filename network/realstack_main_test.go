//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package network_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMain checks, after the real-stack tests, that they left nothing on
// the host: every network namespace, test link, nftables table and dnsmasq
// process of these tests that appeared while they ran must be gone again
// (the test command removes what it created).
func TestMain(m *testing.M) {
	before := hostNetworkState()
	code := m.Run()
	if os.Geteuid() == 0 {
		var left []string
		after := hostNetworkState()
		for _, s := range after {
			if !slices.Contains(before, s) {
				left = append(left, s)
			}
		}
		if len(left) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: the network tests left host state behind: %s\n", strings.Join(left, ", "))
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// hostNetworkState lists what this package's real-stack tests create on
// the host, one string each: namespaces holding an address of the test
// subnets, links of the test bridges (vknet*, vkcrash*), their nftables
// tables and the dnsmasq processes of their state directories. Other
// packages' networks on a shared machine are not counted.
func hostNetworkState() []string {
	var out []string
	if ents, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range ents {
			b, err := exec.Command("ip", "-n", e.Name(), "-o", "addr", "show").Output()
			if err == nil && (strings.Contains(string(b), " 10.251.") || strings.Contains(string(b), " 10.252.") ||
				strings.Contains(string(b), " fd10:251:")) {
				out = append(out, "netns "+e.Name())
			}
		}
	}
	if ents, err := os.ReadDir("/sys/class/net"); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "vknet") || strings.HasPrefix(e.Name(), "vkcrash") {
				out = append(out, "link "+e.Name())
			}
		}
	}
	if b, err := exec.Command("nft", "list", "tables").Output(); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if strings.Contains(l, "vknettest") || strings.Contains(l, "vkcrashtest") {
				out = append(out, "nft "+l)
			}
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.HasPrefix(string(b), "dnsmasq") {
			continue
		}
		if strings.Contains(string(b), "virtkit-net-") || strings.Contains(string(b), "TestHostAdoptsAfterCrash") {
			out = append(out, "dnsmasq pid "+filepath.Base(filepath.Dir(p)))
		}
	}
	return out
}
