//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"errors"

	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

var _ hypervisor.NodeMemoryReporter = (*Hypervisor)(nil)

// NodeMemory reports the host's memory from virNodeGetMemoryStats over all
// NUMA cells (libvirt reads the host's /proc/meminfo; values in KiB). A
// driver without memory statistics (the test driver) falls back to
// virNodeGetFreeMemory and the node info's total.
func (h *Hypervisor) NodeMemory(ctx context.Context) (hypervisor.NodeMemory, error) {
	return call(ctx, h, func(c *lv.Connect) (hypervisor.NodeMemory, error) {
		st, err := c.GetMemoryStats(lv.NODE_MEMORY_STATS_ALL_CELLS, 0)
		if err == nil {
			return nodeMemoryFromStats(st), nil
		}
		var lerr lv.Error
		if !errors.As(err, &lerr) || lerr.Code != lv.ERR_NO_SUPPORT {
			return hypervisor.NodeMemory{}, err
		}
		info, err := c.GetNodeInfo()
		if err != nil {
			return hypervisor.NodeMemory{}, err
		}
		free, err := c.GetFreeMemory()
		if err != nil {
			return hypervisor.NodeMemory{}, err
		}
		return hypervisor.NodeMemory{
			Total: hypervisor.Some(info.Memory * 1024),
			Free:  hypervisor.Some(free),
		}, nil
	})
}

// nodeMemoryFromStats converts libvirt's KiB figures to bytes, keeping the
// fields libvirt did not set unmeasured.
func nodeMemoryFromStats(st *lv.NodeMemoryStats) hypervisor.NodeMemory {
	kib := func(set bool, v uint64) hypervisor.Measured[uint64] {
		if !set {
			return hypervisor.Measured[uint64]{}
		}
		return hypervisor.Some(v * 1024)
	}
	return hypervisor.NodeMemory{
		Total:     kib(st.TotalSet, st.Total),
		Free:      kib(st.FreeSet, st.Free),
		Buffers:   kib(st.BuffersSet, st.Buffers),
		Cached:    kib(st.CachedSet, st.Cached),
		Available: kib(st.AvailableSet, st.Available),
	}
}
