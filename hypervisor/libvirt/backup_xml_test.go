package libvirt

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor"
)

const backupDomainXML = `<domain type='qemu'><name>ns_vm</name><devices>
<disk type='file' device='disk'><driver name='qemu' type='raw'/><source file='/var/lib/v/dv/ns/root.img'/><target dev='vda' bus='virtio'/></disk>
<disk type='file' device='disk'><driver name='qemu' type='raw'/><source file='/var/lib/v/dv/ns/data.img'/><target dev='vdb' bus='virtio'/></disk>
<disk type='file' device='cdrom'><driver name='qemu' type='raw'/><source file='/run/v/cloudinit.iso'/><target dev='sda' bus='sata'/><readonly/></disk>
<disk type='block' device='disk'><driver name='qemu' type='raw'/><source dev='/dev/sdz'/><target dev='vdc' bus='virtio'/></disk>
</devices></domain>`

func TestBackupXML(t *testing.T) {
	tests := []struct {
		name, source string
		wantYes      string
		wantErr      error
	}{
		{name: "first disk", source: "/var/lib/v/dv/ns/root.img", wantYes: "vda"},
		{name: "unclean path", source: "/var/lib/v/dv/ns/../ns/data.img", wantYes: "vdb"},
		{name: "block device", source: "/dev/sdz", wantYes: "vdc"},
		{name: "no such disk", source: "/var/lib/v/dv/ns/other.img", wantErr: hypervisor.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := backupXML(backupDomainXML, tt.source, "/var/lib/v/dv/ns/.snap.tmp")
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			var b libvirtxml.DomainBackup
			require.NoError(t, b.Unmarshal(out), out)
			require.NotNil(t, b.Push, out)
			require.Nil(t, b.Pull)
			require.Len(t, b.Push.Disks.Disks, 4, "every disk is named, the others with backup='no'")
			for _, d := range b.Push.Disks.Disks {
				if d.Name != tt.wantYes {
					assert.Equal(t, "no", d.Backup, d.Name)
					continue
				}
				assert.Equal(t, "yes", d.Backup)
				require.NotNil(t, d.Driver)
				assert.Equal(t, "raw", d.Driver.Type)
				require.NotNil(t, d.Target)
				require.NotNil(t, d.Target.File, out)
				assert.Equal(t, "/var/lib/v/dv/ns/.snap.tmp", d.Target.File.File)
			}
			assert.Contains(t, out, `mode="push"`)
			assert.Contains(t, out, `type="file"`)
		})
	}
}

func TestBackupXMLBadDomain(t *testing.T) {
	_, err := backupXML("<domain", "/a", "/b")
	require.ErrorIs(t, err, hypervisor.ErrInvalidArgument)
}
