package libvirt

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

func TestConsoleAndVNCSockets(t *testing.T) {
	const full = `<domain type='qemu'><name>ns_vm</name><devices>
<serial type='unix'><source mode='bind' path='/run/virtkit/ns/vm/serial0.sock'/><target port='0'/></serial>
<graphics type='vnc' socket='/run/virtkit/ns/vm/vnc.sock'/>
</devices></domain>`
	p, err := consoleSocket(full)
	require.NoError(t, err)
	assert.Equal(t, "/run/virtkit/ns/vm/serial0.sock", p)
	p, err = vncSocket(full)
	require.NoError(t, err)
	assert.Equal(t, "/run/virtkit/ns/vm/vnc.sock", p)

	tests := []struct {
		name, xml string
		find      func(string) (string, error)
		want      error
	}{
		{"no serial", `<domain><name>x</name><devices/></domain>`, consoleSocket, hypervisor.ErrNotSupported},
		{"pty serial", `<domain><name>x</name><devices><serial type='pty'><target port='0'/></serial></devices></domain>`, consoleSocket, hypervisor.ErrNotSupported},
		{"connect-mode socket", `<domain><name>x</name><devices><serial type='unix'><source mode='connect' path='/x'/></serial></devices></domain>`, consoleSocket, hypervisor.ErrNotSupported},
		{"no graphics", `<domain><name>x</name><devices/></domain>`, vncSocket, hypervisor.ErrNotSupported},
		{"vnc on TCP", `<domain><name>x</name><devices><graphics type='vnc' port='5901'/></devices></domain>`, vncSocket, hypervisor.ErrNotSupported},
		{"malformed", `<domain`, vncSocket, hypervisor.ErrInvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.find(tc.xml)
			require.ErrorIs(t, err, tc.want)
		})
	}
}
