//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"

	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

// HostDevices reports the host's PCI, USB and mediated devices from
// libvirt's node devices (virConnectListAllNodeDevices).
func (h *Hypervisor) HostDevices(ctx context.Context) (hypervisor.HostDevices, error) {
	return call(ctx, h, func(c *lv.Connect) (hypervisor.HostDevices, error) {
		devs, err := c.ListAllNodeDevices(lv.CONNECT_LIST_NODE_DEVICES_CAP_PCI_DEV | lv.CONNECT_LIST_NODE_DEVICES_CAP_MDEV | lv.CONNECT_LIST_NODE_DEVICES_CAP_USB_DEV)
		if err != nil {
			return hypervisor.HostDevices{}, err
		}
		docs := make([]string, 0, len(devs))
		for i := range devs {
			x, err := devs[i].GetXMLDesc(0)
			_ = devs[i].Free()
			if err != nil {
				continue // the device went away meanwhile
			}
			docs = append(docs, x)
		}
		return hostDevicesFromXML(docs)
	})
}

var _ hypervisor.HostDeviceLister = (*Hypervisor)(nil)
