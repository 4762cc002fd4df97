//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

// firstMeasuredIteration is the first pass whose dirty rate QEMU has
// measured: libvirt reports memory_dirty_rate from the job's start, but
// QEMU computes it at its bitmap syncs, and the first sync only sets up
// the bitmap. Until the sync that ends pass 1 (memory_iteration 2), the
// value is a placeholder 0, not an idle guest.
const firstMeasuredIteration = 2

// convertJobStats turns libvirt's job statistics into JobStats. Values
// libvirt did not send stay invalid, and so does the dirty rate until QEMU
// has measured one (see firstMeasuredIteration). postCopy is whether the
// caller switched the job to post-copy.
func convertJobStats(info *lv.DomainJobInfo, postCopy bool) hypervisor.JobStats {
	st := hypervisor.JobStats{
		Type:             jobType(info.Type),
		Mode:             hypervisor.ModePreCopy,
		Elapsed:          millis(info.TimeElapsedSet, info.TimeElapsed),
		DataTotal:        count(info.DataTotalSet, info.DataTotal),
		DataProcessed:    count(info.DataProcessedSet, info.DataProcessed),
		DataRemaining:    count(info.DataRemainingSet, info.DataRemaining),
		MemoryTotal:      count(info.MemTotalSet, info.MemTotal),
		MemoryProcessed:  count(info.MemProcessedSet, info.MemProcessed),
		MemoryRemaining:  count(info.MemRemainingSet, info.MemRemaining),
		MemoryBps:        count(info.MemBpsSet, info.MemBps),
		MemoryIteration:  count(info.MemIterationSet, info.MemIteration),
		Downtime:         millis(info.DowntimeSet, info.Downtime),
		SetupTime:        millis(info.SetupTimeSet, info.SetupTime),
		PostcopyRequests: count(info.MemPostcopyReqsSet, info.MemPostcopyReqs),
		DiskTotal:        count(info.DiskTotalSet, info.DiskTotal),
		DiskProcessed:    count(info.DiskProcessedSet, info.DiskProcessed),
		DiskRemaining:    count(info.DiskRemainingSet, info.DiskRemaining),
	}
	page := uint64(defaultPageSize)
	if info.MemPageSizeSet && info.MemPageSize > 0 {
		page = info.MemPageSize
	}
	if info.MemDirtyRateSet && info.MemIterationSet && info.MemIteration >= firstMeasuredIteration {
		st.MemoryDirtyRate = hypervisor.Some(info.MemDirtyRate * page)
	}
	if info.MemConstantSet {
		st.MemoryConstant = hypervisor.Some(info.MemConstant * page)
	}
	if info.AutoConvergeThrottleSet {
		st.AutoConvergeThrottle = hypervisor.Some(int64(info.AutoConvergeThrottle))
	}
	if postCopy || (info.MemPostcopyReqsSet && info.MemPostcopyReqs > 0) {
		st.Mode = hypervisor.ModePostCopy
	}
	return st
}
