package node

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/domain"
)

const twoDisksXML = `<domain type='kvm'><name>ns_vm</name><memory unit='MiB'>64</memory><devices>
<disk type='file' device='disk'><driver name='qemu' type='qcow2' cache='none'/><source file='/var/lib/virtkit/vmis/x/rootdisk.qcow2'/>
<backingStore type='file'><format type='raw'/><source file='/var/lib/virtkit/images/fedora.img'/></backingStore>
<target dev='vda' bus='virtio'/><alias name='ua-rootdisk'/></disk>
<disk type='file' device='disk'><driver name='qemu' type='raw' cache='none'/><source file='/var/lib/virtkit/pvc/ns/old.img'/>
<target dev='vdb' bus='virtio'/><alias name='ua-data'/></disk>
</devices></domain>`

// The destination XML of a volume migration points the migrated volumes'
// disks, and only them, at the destination claims' storage.
func TestRetargetDisks(t *testing.T) {
	for _, tc := range []struct {
		name        string
		sources     map[string]domain.HostVolume
		wantTargets []string
		wantSources map[string]string // target dev -> file or device
		wantBlock   map[string]bool
		wantErr     string
	}{
		{
			name:        "claim to claim",
			sources:     map[string]domain.HostVolume{"data": {Type: domain.SourceFile, Path: "/var/lib/virtkit/pvc/ns/new.img", Format: "raw"}},
			wantTargets: []string{"vdb"},
			wantSources: map[string]string{"vda": "/var/lib/virtkit/vmis/x/rootdisk.qcow2", "vdb": "/var/lib/virtkit/pvc/ns/new.img"},
		},
		{
			name:        "to a block device",
			sources:     map[string]domain.HostVolume{"data": {Type: domain.SourceBlock, Path: "/dev/vg/new", Format: "raw"}},
			wantTargets: []string{"vdb"},
			wantSources: map[string]string{"vda": "/var/lib/virtkit/vmis/x/rootdisk.qcow2", "vdb": "/dev/vg/new"},
			wantBlock:   map[string]bool{"vdb": true},
		},
		{
			name: "both disks, backing chain dropped",
			sources: map[string]domain.HostVolume{
				"rootdisk": {Type: domain.SourceFile, Path: "/var/lib/virtkit/dv/ns/root2.img", Format: "raw"},
				"data":     {Type: domain.SourceFile, Path: "/var/lib/virtkit/pvc/ns/new.img", Format: "raw"},
			},
			wantTargets: []string{"vda", "vdb"},
			wantSources: map[string]string{"vda": "/var/lib/virtkit/dv/ns/root2.img", "vdb": "/var/lib/virtkit/pvc/ns/new.img"},
		},
		{
			name:    "volume without a disk",
			sources: map[string]domain.HostVolume{"scratch": {Type: domain.SourceFile, Path: "/x.img"}},
			wantErr: "volume scratch: the domain has no disk for it",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, targets, err := retargetDisks(twoDisksXML, tc.sources)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantTargets, targets)
			dom := &libvirtxml.Domain{}
			require.NoError(t, dom.Unmarshal(x))
			for _, d := range dom.Devices.Disks {
				dev := d.Target.Dev
				if tc.wantBlock[dev] {
					require.NotNil(t, d.Source.Block, dev)
					assert.Equal(t, tc.wantSources[dev], d.Source.Block.Dev)
					continue
				}
				require.NotNil(t, d.Source.File, dev)
				assert.Equal(t, tc.wantSources[dev], d.Source.File.File, dev)
				if _, moved := tc.sources[d.Alias.Name[len(userAliasPrefix):]]; moved {
					assert.Nil(t, d.BackingStore, "the new claim holds the whole disk")
					assert.Equal(t, "raw", d.Driver.Type)
				}
			}
		})
	}
}
