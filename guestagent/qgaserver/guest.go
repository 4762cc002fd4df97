package qgaserver

import "github.com/virtkit/virtkit/guestagent"

// LinuxGuest returns the Config of a plausible small Linux guest: Fedora
// 40 OS info, the given host name, a loopback and an eth0 interface with
// mac and ipv4 (prefix 24; either may be empty to leave it out), one root
// filesystem on a virtio disk, time zone UTC, one vCPU, no users logged in.
// Callers adjust the result before New.
func LinuxGuest(hostname, mac, ipv4 string) Config {
	used, total := uint64(1<<30), uint64(10<<30)
	eth0 := guestagent.NetworkInterface{Name: "eth0", HardwareAddress: mac}
	if ipv4 != "" {
		eth0.IPAddresses = []guestagent.IPAddress{{Type: "ipv4", Address: ipv4, Prefix: 24}}
	}
	disk := guestagent.DiskAddress{
		PCIController: guestagent.PCIAddress{Slot: 4},
		BusType:       "virtio",
		Dev:           "/dev/vda",
	}
	return Config{
		OSInfo: guestagent.OSInfo{
			ID:            "fedora",
			Name:          "Fedora Linux",
			PrettyName:    "Fedora Linux 40 (Cloud Edition)",
			Version:       "40 (Cloud Edition)",
			VersionID:     "40",
			Variant:       "Cloud Edition",
			VariantID:     "cloud",
			KernelRelease: "6.8.5-301.fc40.x86_64",
			KernelVersion: "#1 SMP PREEMPT_DYNAMIC Thu Apr 11 20:00:10 UTC 2024",
			Machine:       "x86_64",
		},
		HostName: hostname,
		Interfaces: []guestagent.NetworkInterface{
			{
				Name:            "lo",
				HardwareAddress: "00:00:00:00:00:00",
				IPAddresses: []guestagent.IPAddress{
					{Type: "ipv4", Address: "127.0.0.1", Prefix: 8},
					{Type: "ipv6", Address: "::1", Prefix: 128},
				},
			},
			eth0,
		},
		Filesystems: []guestagent.FSInfo{{
			Name: "vda1", Mountpoint: "/", Type: "ext4",
			UsedBytes: &used, TotalBytes: &total,
			Disk: []guestagent.DiskAddress{disk},
		}},
		Disks:    []guestagent.Disk{{Name: "/dev/vda", Address: &disk}},
		Timezone: guestagent.Timezone{Zone: "UTC"},
		VCPUs:    []guestagent.VCPU{{LogicalID: 0, Online: true}},
	}
}
