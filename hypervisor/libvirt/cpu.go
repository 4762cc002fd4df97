//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"errors"

	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

var _ hypervisor.HostCPUReporter = (*Hypervisor)(nil)

// HostCPU implements [hypervisor.HostCPUReporter] from the host capabilities
// (the exact CPU) and the domain capabilities of [Options.DomainType] (the
// model host-model expands to, the usable named models). A driver without
// domain capabilities (the test driver) falls back to the host
// capabilities; with no CPU model in either the error matches
// [hypervisor.ErrNotSupported].
func (h *Hypervisor) HostCPU(ctx context.Context) (hypervisor.HostCPU, error) {
	type docs struct{ caps, domCaps string }
	d, err := call(ctx, h, func(c *lv.Connect) (docs, error) {
		var d docs
		var err error
		if d.caps, err = c.GetCapabilities(); err != nil {
			return d, err
		}
		d.domCaps, err = c.GetDomainCapabilities("", "", "", h.opts.DomainType, 0)
		var lerr lv.Error
		if err != nil && errors.As(err, &lerr) && lerr.Code == lv.ERR_NO_SUPPORT {
			d.domCaps, err = "", nil
		}
		return d, err
	})
	if err != nil {
		return hypervisor.HostCPU{}, wrap("host cpu", "", err)
	}
	return parseHostCPU(d.caps, d.domCaps)
}
