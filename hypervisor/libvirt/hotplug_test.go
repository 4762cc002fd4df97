//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

func TestParsePluggableMemory(t *testing.T) {
	for _, tc := range []struct {
		name    string
		xml     string
		want    hypervisor.PluggableMemory
		wantErr error
	}{
		{name: "live virtio-mem device", // as libvirt 9.0 reports it, the guest having plugged 512MiB
			xml: `<domain><devices><memory model='virtio-mem'><target><size unit='KiB'>1048576</size><node>0</node>
<block unit='KiB'>2048</block><requested unit='KiB'>524288</requested><current unit='KiB'>524288</current>
<address base='0x100000000'/></target><alias name='virtiomem0'/></memory></devices></domain>`,
			want: hypervisor.PluggableMemory{SizeBytes: 1 << 30, BlockBytes: 2 << 20, RequestedBytes: 512 << 20, CurrentBytes: 512 << 20}},
		{name: "a DIMM is not pluggable memory",
			xml:     `<domain><devices><memory model='dimm'><target><size unit='MiB'>512</size><node>0</node></target></memory></devices></domain>`,
			wantErr: hypervisor.ErrNotSupported},
		{name: "no memory device", xml: `<domain><devices/></domain>`, wantErr: hypervisor.ErrNotSupported},
		{name: "unknown unit",
			xml:     `<domain><devices><memory model='virtio-mem'><target><size unit='parsec'>1</size></target></memory></devices></domain>`,
			wantErr: hypervisor.ErrInvalidArgument},
		{name: "not XML", xml: `<domain`, wantErr: hypervisor.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePluggableMemory(tc.xml)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
