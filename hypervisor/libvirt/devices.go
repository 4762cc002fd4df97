//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"

	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

var _ hypervisor.DeviceAttacher = (*Hypervisor)(nil)

// deviceFlags changes the running guest and its persistent definition.
const deviceFlags = lv.DOMAIN_DEVICE_MODIFY_LIVE | lv.DOMAIN_DEVICE_MODIFY_CONFIG

// AttachDevice adds a device to the running domain and its definition
// (virDomainAttachDeviceFlags, live and config).
func (h *Hypervisor) AttachDevice(ctx context.Context, name, deviceXML string) error {
	return doDomain(ctx, h, "attach device", name, func(d *lv.Domain) error {
		return d.AttachDeviceFlags(deviceXML, deviceFlags)
	})
}

// DetachDevice removes a device from the running domain and its
// definition (virDomainDetachDeviceFlags, live and config); the guest may
// release it after the call returns.
func (h *Hypervisor) DetachDevice(ctx context.Context, name, deviceXML string) error {
	return doDomain(ctx, h, "detach device", name, func(d *lv.Domain) error {
		return d.DetachDeviceFlags(deviceXML, deviceFlags)
	})
}
