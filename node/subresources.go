package node

import (
	"errors"
	"fmt"
)

// ErrNoGuestInfo is returned by the guest subresources when the agent does
// not follow the VMI's guest agent (not running here, no agent, or guest
// information disabled).
var ErrNoGuestInfo = errors.New("no guest agent information")

// GuestOSInfo is KubeVirt's guestosinfo subresource: what the guest agent
// of a VMI running on this node reports (OS, hostname, timezone, and the
// first ten users and filesystems).
func (a *Agent) GuestOSInfo(namespace, name string) (GuestInfo, error) {
	gi, err := a.guestInfo(namespace, name)
	if err != nil {
		return GuestInfo{}, err
	}
	gi.Users = gi.Users[:min(len(gi.Users), 10)]
	gi.Filesystems = gi.Filesystems[:min(len(gi.Filesystems), 10)]
	return gi, nil
}

// UserList is KubeVirt's userlist subresource.
func (a *Agent) UserList(namespace, name string) ([]GuestUser, error) {
	gi, err := a.guestInfo(namespace, name)
	return gi.Users, err
}

// FilesystemList is KubeVirt's filesystemlist subresource.
func (a *Agent) FilesystemList(namespace, name string) ([]GuestFilesystem, error) {
	gi, err := a.guestInfo(namespace, name)
	return gi.Filesystems, err
}

func (a *Agent) guestInfo(namespace, name string) (GuestInfo, error) {
	if a.opts.GuestInfo == nil {
		return GuestInfo{}, fmt.Errorf("vmi %s/%s: %w: guest information disabled on node %s", namespace, name, ErrNoGuestInfo, a.opts.NodeName)
	}
	gi, ok := a.opts.GuestInfo.Info(DomainName(namespace, name))
	if !ok || !gi.Connected {
		return GuestInfo{}, fmt.Errorf("vmi %s/%s: %w on node %s", namespace, name, ErrNoGuestInfo, a.opts.NodeName)
	}
	return gi, nil
}
