package node

import (
	"context"

	"github.com/virtkit/virtkit"
)

// GuestInfoSource follows the guest agents of the domains on this host and
// holds their latest answers. The agent tells it which domains to follow;
// it calls back when a guest's information changes.
type GuestInfoSource interface {
	// Start runs until ctx ends; changed is called (without blocking for
	// long) whenever a followed guest's info or connectivity changes.
	Start(ctx context.Context, changed func(namespace, name string))
	// Follow starts following a running domain's agent; Forget stops.
	Follow(domain string)
	Forget(domain string)
	// Info returns the latest information about a domain's guest.
	Info(domain string) (GuestInfo, bool)
}

// GuestInfo is what a guest agent reported, already converted and bounded
// for status.
type GuestInfo struct {
	// Connected is true while the agent answers.
	Connected bool
	// UnsupportedReason is non-empty when the agent lacks commands virtkit
	// requires (AgentVersionNotSupported).
	UnsupportedReason string
	OS                virtkit.VirtualMachineInstanceGuestOSInfo
	Hostname          string
	Timezone          string
	Interfaces        []GuestInterface
	Users             []GuestUser
	Filesystems       []GuestFilesystem
	FSFreezeStatus    string
}

// GuestInterface is one NIC as the guest sees it.
type GuestInterface struct {
	Name string
	MAC  string
	IPs  []string
}

// GuestUser is a logged-in user.
type GuestUser struct {
	UserName  string  `json:"userName"`
	Domain    string  `json:"domain,omitempty"`
	LoginTime float64 `json:"loginTime,omitempty"`
}

// GuestFilesystem is one mounted filesystem.
type GuestFilesystem struct {
	DiskName       string `json:"diskName"`
	MountPoint     string `json:"mountPoint"`
	FileSystemType string `json:"fileSystemType"`
	UsedBytes      int64  `json:"usedBytes"`
	TotalBytes     int64  `json:"totalBytes"`
}
