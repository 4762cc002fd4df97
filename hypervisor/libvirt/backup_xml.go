package libvirt

import (
	"fmt"
	"path/filepath"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor"
)

// backupXML is the push-mode <domainbackup> that copies the disk of
// domainXML whose host source is source into the new raw file target and
// leaves every other disk out (libvirt would otherwise back up every disk,
// each to a file it names itself next to the disk's source).
func backupXML(domainXML, source, target string) (string, error) {
	var d libvirtxml.Domain
	if err := d.Unmarshal(domainXML); err != nil {
		return "", fmt.Errorf("domain XML: %w: %w", hypervisor.ErrInvalidArgument, err)
	}
	want := filepath.Clean(source)
	var disks []libvirtxml.DomainBackupPushDisk
	found := false
	if d.Devices != nil {
		for _, disk := range d.Devices.Disks {
			if disk.Target == nil || disk.Target.Dev == "" {
				continue
			}
			if p := diskSourcePath(disk.Source); p != "" && filepath.Clean(p) == want && !found {
				found = true
				disks = append(disks, libvirtxml.DomainBackupPushDisk{
					Name:   disk.Target.Dev,
					Backup: "yes",
					Driver: &libvirtxml.DomainBackupDiskDriver{Type: "raw"},
					Target: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: target}},
				})
				continue
			}
			disks = append(disks, libvirtxml.DomainBackupPushDisk{Name: disk.Target.Dev, Backup: "no"})
		}
	}
	if !found {
		return "", fmt.Errorf("no disk of the domain has the source %s: %w", source, hypervisor.ErrInvalidArgument)
	}
	b := libvirtxml.DomainBackup{Push: &libvirtxml.DomainBackupPush{Disks: &libvirtxml.DomainBackupPushDisks{Disks: disks}}}
	return b.Marshal()
}

// diskSourcePath is the host file or block device a disk reads, or "".
func diskSourcePath(s *libvirtxml.DomainDiskSource) string {
	switch {
	case s == nil:
		return ""
	case s.File != nil:
		return s.File.File
	case s.Block != nil:
		return s.Block.Dev
	}
	return ""
}
