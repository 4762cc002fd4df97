//go:build linux

package network

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
)

func TestMasqueradeRules(t *testing.T) {
	base := Masquerade{ID: "abc", PodAddress: netip.MustParsePrefix("10.244.3.7/24")}
	dual := base
	dual.PodAddress6 = netip.MustParsePrefix("fd10:244:3::7/64")
	ports := []virtkit.Port{{Port: 8080}, {Port: 53, Protocol: "UDP"}}
	for _, tc := range []struct {
		name        string
		m           Masquerade
		ports       []virtkit.Port
		want, avoid []string
	}{
		{"ipv4 all ports", base, nil,
			[]string{`iifname "vkeabc" ip daddr 10.244.3.7 meta l4proto { tcp, udp } dnat ip to 10.0.2.2`,
				`iifname "vkiabc" oifname "vkeabc" ip saddr 10.0.2.0/24 masquerade`},
			[]string{"ip6", "dport"}},
		{"ipv4 declared ports", base, ports,
			[]string{`ip daddr 10.244.3.7 tcp dport 8080 dnat ip to 10.0.2.2`, `ip daddr 10.244.3.7 udp dport 53 dnat ip to 10.0.2.2`},
			[]string{"ip6", "l4proto"}},
		{"dual stack declared ports", dual, ports,
			[]string{`ip daddr 10.244.3.7 tcp dport 8080 dnat ip to 10.0.2.2`,
				`ip6 daddr fd10:244:3::7 tcp dport 8080 dnat ip6 to fd10:0:2::2`,
				`ip6 daddr fd10:244:3::7 udp dport 53 dnat ip6 to fd10:0:2::2`,
				`iifname "vkiabc" oifname "vkeabc" ip6 saddr fd10:0:2::/120 masquerade`},
			[]string{"l4proto", "dport 9090"}},
		{"dual stack all ports", dual, nil,
			[]string{`ip6 daddr fd10:244:3::7 meta l4proto { tcp, udp } dnat ip6 to fd10:0:2::2`},
			[]string{"dport"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m
			m.Ports = tc.ports
			rules := masqueradeRules(m, "vke"+m.ID)
			for _, w := range tc.want {
				assert.Contains(t, rules, w)
			}
			for _, a := range tc.avoid {
				assert.NotContains(t, rules, a)
			}
			// nft itself accepts them (check mode, nothing applied).
			if os.Geteuid() != 0 {
				return
			}
			if _, err := exec.LookPath("nft"); err != nil {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "nft", "--check", "-f", "-")
			// The first two lines create and delete the table so the
			// script also runs on a fresh namespace; check mode skips them.
			cmd.Stdin = strings.NewReader(rules)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s\n%s", out, rules)
		})
	}
}
