package node

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/internal/netpolicy"
)

func TestParseEndpointPath(t *testing.T) {
	tests := []struct {
		path    string
		want    endpointRequest
		wantErr string
	}{
		{path: "/v1/namespaces/ns/virtualmachineinstances/vm/console", want: endpointRequest{namespace: "ns", name: "vm", verb: "console"}},
		{path: "/v1/namespaces/ns/virtualmachineinstances/vm/portforward/22", want: endpointRequest{namespace: "ns", name: "vm", verb: "portforward", port: 22, protocol: "tcp"}},
		{path: "/v1/namespaces/ns/virtualmachineinstances/vm/portforward/53/udp", want: endpointRequest{namespace: "ns", name: "vm", verb: "portforward", port: 53, protocol: "udp"}},
		{path: "/v1/namespaces/ns/virtualmachineinstances/vm/portforward/0", wantErr: "want 1-65535"},
		{path: "/v1/namespaces/ns/virtualmachineinstances/vm/portforward/22/sctp", wantErr: "want tcp or udp"},
		{path: "/v1/namespaces/ns/virtualmachineinstances/vm/console/x", wantErr: "nothing may follow"},
		{path: "/v1/namespaces/ns/virtualmachineinstances/vm/vnc/screenshot", want: endpointRequest{namespace: "ns", name: "vm", verb: ScreenshotVerb}},
		{path: "/v1/namespaces/ns/virtualmachineinstances/vm/vnc/x", wantErr: "only screenshot may follow vnc"},
		{path: "/v1/namespaces/ns/virtualmachineinstances/vm/exec", wantErr: "unknown verb"},
		{path: "/v1/namespaces/ns/pods/vm/console", wantErr: "want /v1/namespaces/"},
		{path: "/v2/x", wantErr: "want /v1/namespaces/"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			got, err := parseEndpointPath(tc.path)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestGuestAddress(t *testing.T) {
	vmi := func(ifaces ...virtkit.VirtualMachineInstanceNetworkInterface) *virtkit.VirtualMachineInstance {
		v := &virtkit.VirtualMachineInstance{}
		v.Namespace, v.Name = "ns", "vm"
		v.Status.Interfaces = ifaces
		return v
	}
	nic := func(ips ...string) virtkit.VirtualMachineInstanceNetworkInterface {
		return virtkit.VirtualMachineInstanceNetworkInterface{Name: "default", MAC: "52:54:00:00:00:01", InfoSource: virtkit.InfoSourceDomainAndGA, IPs: ips}
	}
	guestOnly := virtkit.VirtualMachineInstanceNetworkInterface{InterfaceName: "eth1", MAC: "52:54:00:00:00:02", InfoSource: virtkit.InfoSourceGuestAgent, IPs: []string{"10.9.9.9"}}
	lease := func(ips ...string) map[string][]string { return map[string][]string{"default": ips} }
	podNet := netpolicy.Policy{Allowed: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}}
	loopback := netpolicy.Policy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	tests := []struct {
		name    string
		vmi     *virtkit.VirtualMachineInstance
		nat     map[string]bool
		leased  map[string][]string
		policy  netpolicy.Policy
		want    string
		wantErr bool
	}{
		{name: "assigned pod address", vmi: vmi(nic("10.244.1.5")), leased: lease("10.244.1.5"), want: "10.244.1.5"},
		{name: "assigned, guest reports another", vmi: vmi(nic("192.168.7.7")), leased: lease("10.244.1.5"), want: "10.244.1.5"},
		{name: "IPv4 before IPv6", vmi: vmi(nic()), leased: lease("fd00::5", "10.244.1.5"), want: "10.244.1.5"},
		{name: "IPv6 only", vmi: vmi(nic()), leased: lease("fd00::5"), want: "fd00::5"},
		{name: "reported only", vmi: vmi(nic("10.244.1.5")), wantErr: true},
		{name: "reported loopback", vmi: vmi(nic("127.0.0.1")), wantErr: true},
		{name: "reported metadata", vmi: vmi(nic("169.254.169.254")), wantErr: true},
		{name: "guest-only NIC with a lease name clash", vmi: vmi(guestOnly), leased: map[string][]string{"": {"10.9.9.9"}}, wantErr: true},
		{name: "assigned loopback is still refused", vmi: vmi(nic()), leased: lease("127.0.0.1"), wantErr: true},
		{name: "reported inside the allowed networks", vmi: vmi(nic("10.244.1.5")), policy: podNet, want: "10.244.1.5"},
		{name: "reported outside the allowed networks", vmi: vmi(nic("127.0.0.1")), policy: podNet, wantErr: true},
		{name: "loopback allowed explicitly", vmi: vmi(nic("127.0.0.1")), policy: loopback, want: "127.0.0.1"},
		{name: "user-mode NAT", vmi: vmi(virtkit.VirtualMachineInstanceNetworkInterface{Name: "default", IP: "10.0.2.15", MAC: "52:54:00:AA:00:01", InfoSource: virtkit.InfoSourceDomain}),
			nat: map[string]bool{"52:54:00:aa:00:01": true}, leased: lease("10.244.1.5"), wantErr: true},
		{name: "no interfaces", vmi: vmi(), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := guestAddress(tc.vmi, tc.nat, tc.leased, tc.policy)
			if tc.wantErr {
				require.ErrorIs(t, err, ErrNoGuestAddress)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
