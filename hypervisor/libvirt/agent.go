//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"time"

	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

// AgentCommand passes a raw QGA command to the guest through libvirt
// (virDomainQemuAgentCommand) and returns the raw reply. libvirt's own
// timeout follows ctx's deadline (whole seconds, at least one); without a
// deadline libvirt's default applies.
func (h *Hypervisor) AgentCommand(ctx context.Context, domain string, command string) (string, error) {
	timeout := lv.DOMAIN_QEMU_AGENT_COMMAND_DEFAULT
	if dl, ok := ctx.Deadline(); ok {
		timeout = lv.DomainQemuAgentCommandTimeout(max(1, int((time.Until(dl)+time.Second-1)/time.Second)))
	}
	return withDomain(ctx, h, "agent command", domain, func(_ *lv.Connect, d *lv.Domain) (string, error) {
		return d.QemuAgentCommand(command, timeout, 0)
	})
}

// SetThrottle is not available through libvirt: it has no call that sets
// the vCPU throttle directly. Auto-converge (MigrationParams.AutoConverge
// with AutoConvergeInitial/AutoConvergeIncrement) is the libvirt way.
func (h *Hypervisor) SetThrottle(ctx context.Context, percent int) error {
	return hypervisor.NotSupportedError("SetThrottle",
		"libvirt has no call that sets the vCPU throttle; use MigrationParams.AutoConverge with AutoConvergeInitial/AutoConvergeIncrement")
}
