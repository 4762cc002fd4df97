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
// the host: every network namespace, link whose name starts with vk,
// nftables table and dnsmasq process that appeared while they ran must be
// gone again (the test command removes what it created).
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

// hostNetworkState lists namespaces, vk* links, nftables tables and
// dnsmasq processes, one string each.
func hostNetworkState() []string {
	var out []string
	if ents, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range ents {
			out = append(out, "netns "+e.Name())
		}
	}
	if ents, err := os.ReadDir("/sys/class/net"); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "vk") {
				out = append(out, "link "+e.Name())
			}
		}
	}
	if b, err := exec.Command("nft", "list", "tables").Output(); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				out = append(out, "nft "+l)
			}
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == "dnsmasq" {
			out = append(out, "dnsmasq pid "+filepath.Base(filepath.Dir(p)))
		}
	}
	return out
}
