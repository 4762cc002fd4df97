package sim

import (
	"context"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

var _ hypervisor.NodeMemoryReporter = (*Host)(nil)

// NodeMemory reports the modelled host: its configured memory, and as free
// what its active guests leave of it (each guest's resident set, as
// [Host.Stats] reports it). The model has no page cache or buffers, so
// those and MemAvailable are not measured, as on a backend that does not
// report them.
func (h *Host) NodeMemory(ctx context.Context) (hypervisor.NodeMemory, error) {
	var nm hypervisor.NodeMemory
	err := h.do(ctx, func(time.Time) error {
		total := h.opts.MemoryBytes
		var used uint64
		for _, d := range h.domains {
			if d.state.IsActive() {
				used += residentOf(d)
			}
		}
		nm = hypervisor.NodeMemory{
			Total:    hypervisor.Some(total),
			Free:     hypervisor.Some(total - min(used, total)),
			Modelled: true,
		}
		return nil
	})
	return nm, err
}

// residentOf is an active guest's resident set in the model: a fixed
// overhead plus its working set, at most its current memory.
func residentOf(d *domain) uint64 {
	return min(d.spec().curMemory, uint64(64<<20)+workingSetOf(d))
}
