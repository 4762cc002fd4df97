package node

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
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
	tests := []struct {
		name    string
		vmi     *virtkit.VirtualMachineInstance
		nat     map[string]bool
		want    string
		wantErr bool
	}{
		{name: "pod address", vmi: vmi(virtkit.VirtualMachineInstanceNetworkInterface{IP: "10.244.1.5", MAC: "52:54:00:00:00:01"}), want: "10.244.1.5"},
		{name: "IPv4 before IPv6", vmi: vmi(virtkit.VirtualMachineInstanceNetworkInterface{IPs: []string{"fd00::5", "10.244.1.5"}}), want: "10.244.1.5"},
		{name: "IPv6 only", vmi: vmi(virtkit.VirtualMachineInstanceNetworkInterface{IPs: []string{"fe80::1", "fd00::5"}}), want: "fd00::5"},
		{name: "user-mode NAT", vmi: vmi(virtkit.VirtualMachineInstanceNetworkInterface{IP: "10.0.2.15", MAC: "52:54:00:AA:00:01"}),
			nat: map[string]bool{"52:54:00:aa:00:01": true}, wantErr: true},
		{name: "no interfaces", vmi: vmi(), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := guestAddress(tc.vmi, tc.nat)
			if tc.wantErr {
				require.ErrorIs(t, err, ErrNoGuestAddress)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
