package guestagent

import "time"

// Command names of the QEMU guest agent protocol used by this package.
const (
	CmdSync              = "guest-sync"
	CmdSyncDelimited     = "guest-sync-delimited"
	CmdPing              = "guest-ping"
	CmdInfo              = "guest-info"
	CmdGetOSInfo         = "guest-get-osinfo"
	CmdGetHostName       = "guest-get-host-name"
	CmdGetUsers          = "guest-get-users"
	CmdGetFSInfo         = "guest-get-fsinfo"
	CmdNetworkInterfaces = "guest-network-get-interfaces"
	CmdGetTimezone       = "guest-get-timezone"
	CmdGetTime           = "guest-get-time"
	CmdGetVCPUs          = "guest-get-vcpus"
	CmdGetDisks          = "guest-get-disks"
	CmdFSFreezeStatus    = "guest-fsfreeze-status"
	CmdFSFreezeFreeze    = "guest-fsfreeze-freeze"
	CmdFSFreezeThaw      = "guest-fsfreeze-thaw"
	CmdShutdown          = "guest-shutdown"
)

// Info is the reply of guest-info.
type Info struct {
	Version           string        `json:"version"`
	SupportedCommands []CommandInfo `json:"supported_commands"`
}

// CommandInfo describes one command the agent knows. A command blocked with
// qemu-ga -b is listed with Enabled false.
type CommandInfo struct {
	Name            string `json:"name"`
	Enabled         bool   `json:"enabled"`
	SuccessResponse bool   `json:"success-response"`
}

// Command returns the entry for name and whether it is listed.
func (i Info) Command(name string) (CommandInfo, bool) {
	for _, c := range i.SupportedCommands {
		if c.Name == name {
			return c, true
		}
	}
	return CommandInfo{}, false
}

// OSInfo is the reply of guest-get-osinfo (os-release and uname fields).
type OSInfo struct {
	KernelRelease string `json:"kernel-release,omitempty"`
	KernelVersion string `json:"kernel-version,omitempty"`
	Machine       string `json:"machine,omitempty"`
	ID            string `json:"id,omitempty"`
	Name          string `json:"name,omitempty"`
	PrettyName    string `json:"pretty-name,omitempty"`
	Version       string `json:"version,omitempty"`
	VersionID     string `json:"version-id,omitempty"`
	Variant       string `json:"variant,omitempty"`
	VariantID     string `json:"variant-id,omitempty"`
}

// HostNameReply is the reply of guest-get-host-name.
type HostNameReply struct {
	HostName string `json:"host-name"`
}

// User is one logged-in user from guest-get-users. LoginTime is seconds
// since the epoch with a fractional part, as the agent reports it.
type User struct {
	User      string  `json:"user"`
	Domain    string  `json:"domain,omitempty"`
	LoginTime float64 `json:"login-time"`
}

// FSInfo is one mounted filesystem from guest-get-fsinfo. The byte counts
// are pointers because older agents and some filesystems omit them.
type FSInfo struct {
	Name       string        `json:"name"`
	Mountpoint string        `json:"mountpoint"`
	Type       string        `json:"type"`
	UsedBytes  *uint64       `json:"used-bytes,omitempty"`
	TotalBytes *uint64       `json:"total-bytes,omitempty"`
	Disk       []DiskAddress `json:"disk"`
}

// DiskAddress locates a disk behind a filesystem or in guest-get-disks.
type DiskAddress struct {
	PCIController PCIAddress `json:"pci-controller"`
	BusType       string     `json:"bus-type"`
	Bus           int        `json:"bus"`
	Target        int        `json:"target"`
	Unit          int        `json:"unit"`
	Serial        string     `json:"serial,omitempty"`
	Dev           string     `json:"dev,omitempty"`
}

// PCIAddress is a PCI address as the agent reports it.
type PCIAddress struct {
	Domain   int `json:"domain"`
	Bus      int `json:"bus"`
	Slot     int `json:"slot"`
	Function int `json:"function"`
}

// NetworkInterface is one interface from guest-network-get-interfaces.
type NetworkInterface struct {
	Name            string             `json:"name"`
	HardwareAddress string             `json:"hardware-address,omitempty"`
	IPAddresses     []IPAddress        `json:"ip-addresses,omitempty"`
	Statistics      *NetworkStatistics `json:"statistics,omitempty"`
}

// IPAddress is one address of a NetworkInterface; Type is "ipv4" or "ipv6".
type IPAddress struct {
	Type    string `json:"ip-address-type"`
	Address string `json:"ip-address"`
	Prefix  int    `json:"prefix"`
}

// NetworkStatistics are an interface's counters.
type NetworkStatistics struct {
	RxBytes   uint64 `json:"rx-bytes"`
	RxPackets uint64 `json:"rx-packets"`
	RxErrs    uint64 `json:"rx-errs"`
	RxDropped uint64 `json:"rx-dropped"`
	TxBytes   uint64 `json:"tx-bytes"`
	TxPackets uint64 `json:"tx-packets"`
	TxErrs    uint64 `json:"tx-errs"`
	TxDropped uint64 `json:"tx-dropped"`
}

// Timezone is the reply of guest-get-timezone; Offset is seconds east of UTC.
type Timezone struct {
	Zone   string `json:"zone,omitempty"`
	Offset int    `json:"offset"`
}

// VCPU is one entry of guest-get-vcpus.
type VCPU struct {
	LogicalID  int  `json:"logical-id"`
	Online     bool `json:"online"`
	CanOffline bool `json:"can-offline,omitempty"`
}

// Disk is one entry of guest-get-disks.
type Disk struct {
	Name         string       `json:"name"`
	Partition    bool         `json:"partition"`
	Dependencies []string     `json:"dependencies,omitempty"`
	Address      *DiskAddress `json:"address,omitempty"`
	Alias        string       `json:"alias,omitempty"`
}

// FreezeStatus is the reply of guest-fsfreeze-status.
type FreezeStatus string

// The two states guest-fsfreeze-status reports.
const (
	FreezeStatusThawed FreezeStatus = "thawed"
	FreezeStatusFrozen FreezeStatus = "frozen"
)

// ShutdownMode is guest-shutdown's mode argument.
type ShutdownMode string

// The modes guest-shutdown accepts.
const (
	ShutdownPowerdown ShutdownMode = "powerdown"
	ShutdownReboot    ShutdownMode = "reboot"
	ShutdownHalt      ShutdownMode = "halt"
)

// timeFromNanos converts guest-get-time's nanoseconds since the epoch.
func timeFromNanos(ns int64) time.Time { return time.Unix(0, ns).UTC() }
