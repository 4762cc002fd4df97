//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"

	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

var _ hypervisor.DeviceAttacher = (*Hypervisor)(nil)

// deviceFlags changes the running guest and, for a persistent domain, its
// definition (libvirt refuses the config flag on a transient domain).
func deviceFlags(d *lv.Domain) (lv.DomainDeviceModifyFlags, error) {
	persistent, err := d.IsPersistent()
	if err != nil {
		return 0, err
	}
	if persistent {
		return lv.DOMAIN_DEVICE_MODIFY_LIVE | lv.DOMAIN_DEVICE_MODIFY_CONFIG, nil
	}
	return lv.DOMAIN_DEVICE_MODIFY_LIVE, nil
}

// AttachDevice adds a device to the running domain and to its definition
// when it has one (virDomainAttachDeviceFlags, live and config).
func (h *Hypervisor) AttachDevice(ctx context.Context, name, deviceXML string) error {
	return doDomain(ctx, h, "attach device", name, func(d *lv.Domain) error {
		flags, err := deviceFlags(d)
		if err != nil {
			return err
		}
		return d.AttachDeviceFlags(deviceXML, flags)
	})
}

// DetachDevice removes a device from the running domain and from its
// definition when it has one (virDomainDetachDeviceFlags, live and
// config); the guest may release it after the call returns.
func (h *Hypervisor) DetachDevice(ctx context.Context, name, deviceXML string) error {
	return doDomain(ctx, h, "detach device", name, func(d *lv.Domain) error {
		flags, err := deviceFlags(d)
		if err != nil {
			return err
		}
		return d.DetachDeviceFlags(deviceXML, flags)
	})
}
