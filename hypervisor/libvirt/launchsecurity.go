//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"errors"

	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

var _ hypervisor.LaunchSecurityReporter = (*Hypervisor)(nil)

// LaunchSecurity implements [hypervisor.LaunchSecurityReporter] from the
// domain capabilities of [Options.DomainType]. A driver without domain
// capabilities (the test driver) offers nothing.
func (h *Hypervisor) LaunchSecurity(ctx context.Context) (hypervisor.LaunchSecurity, error) {
	doc, err := call(ctx, h, func(c *lv.Connect) (string, error) {
		d, err := c.GetDomainCapabilities("", "", "", h.opts.DomainType, 0)
		var lerr lv.Error
		if err != nil && errors.As(err, &lerr) && lerr.Code == lv.ERR_NO_SUPPORT {
			return "", nil
		}
		return d, err
	})
	if err != nil {
		return hypervisor.LaunchSecurity{}, wrap("launch security", "", err)
	}
	return launchSecurityFromDomCaps(doc)
}
