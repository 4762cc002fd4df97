//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"fmt"

	lv "libvirt.org/go/libvirt"
)

// ProductVersion is the hypervisor's (QEMU's) version as libvirt reports
// it, "major.minor.release": KubeVirt's VirtProductInfo downward metric.
func (h *Hypervisor) ProductVersion(ctx context.Context) (string, error) {
	return call(ctx, h, func(c *lv.Connect) (string, error) {
		v, err := c.GetVersion()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d.%d.%d", v/1000000, v/1000%1000, v%1000), nil
	})
}
