//go:build !cgo || !(libvirt || libvirt_dlopen)

package libvirt

import (
	"context"

	"github.com/virtkit/virtkit/hypervisor"
)

var _ hypervisor.NodeMemoryReporter = (*Hypervisor)(nil)

// NodeMemory fails: see [New].
func (h *Hypervisor) NodeMemory(context.Context) (hypervisor.NodeMemory, error) {
	return hypervisor.NodeMemory{}, errNoCgo("NodeMemory")
}
