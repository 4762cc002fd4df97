package hypervisor

import "context"

// DeviceAttacher changes the devices of a running domain, as libvirt's
// virDomainAttachDeviceFlags and virDomainDetachDeviceFlags do with the
// live flag, and the config flag when the domain is persistent: the
// running guest gets (or loses) the device, and so does its definition,
// if it has one; a live migration carries the running guest's devices.
// deviceXML is one device element (a <disk>, say).
//
// DetachDevice returns once the request is made; the guest may release
// the device a moment later (libvirt's device-removed event), so callers
// read the domain's XML to see it gone. Detaching a device the domain
// does not have is an error. A domain that is not running gives an error
// matching ErrInvalidState.
type DeviceAttacher interface {
	AttachDevice(ctx context.Context, name, deviceXML string) error
	DetachDevice(ctx context.Context, name, deviceXML string) error
}
