//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"fmt"
	"time"

	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

// statsTypes are the stat groups Stats asks for. Drivers skip groups they
// do not know (no ENFORCE flag), so the test driver returns state only.
const statsTypes = lv.DOMAIN_STATS_STATE | lv.DOMAIN_STATS_CPU_TOTAL | lv.DOMAIN_STATS_BALLOON |
	lv.DOMAIN_STATS_VCPU | lv.DOMAIN_STATS_INTERFACE | lv.DOMAIN_STATS_BLOCK | lv.DOMAIN_STATS_DIRTYRATE

// Stats returns the domain's counters from virDomainListGetStats. Values
// libvirt did not report stay invalid; KiB become bytes.
func (h *Hypervisor) Stats(ctx context.Context, name string) (hypervisor.DomainStats, error) {
	return withDomain(ctx, h, "stats", name, func(c *lv.Connect, d *lv.Domain) (hypervisor.DomainStats, error) {
		recs, err := c.GetAllDomainStats([]*lv.Domain{d}, statsTypes, 0)
		if err != nil {
			return hypervisor.DomainStats{}, err
		}
		defer func() {
			for _, r := range recs {
				if r.Domain != nil {
					freeDomain(h.log, r.Domain)
				}
			}
		}()
		if len(recs) != 1 {
			return hypervisor.DomainStats{}, fmt.Errorf("libvirt returned %d stats records for one domain", len(recs))
		}
		st := convertStats(name, &recs[0])
		st.Collected = time.Now()
		return st, nil
	})
}

func convertStats(name string, r *lv.DomainStats) hypervisor.DomainStats {
	st := hypervisor.DomainStats{Domain: name, State: hypervisor.StateNoState, Reason: hypervisor.ReasonUnknown}
	if s := r.State; s != nil && s.StateSet {
		st.State, st.Reason = domainState(s.State, s.Reason)
	}
	if c := r.Cpu; c != nil {
		st.CPUTime = nanos(c.TimeSet, c.Time)
		st.CPUUser = nanos(c.UserSet, c.User)
		st.CPUSystem = nanos(c.SystemSet, c.System)
	}
	for i, v := range r.Vcpu {
		vs := hypervisor.VCPUStats{
			ID:    i,
			Time:  nanos(v.TimeSet, v.Time),
			Wait:  nanos(v.WaitSet, v.Wait),
			Delay: nanos(v.DelaySet, v.Delay),
		}
		if v.StateSet {
			vs.State = vcpuState(v.State)
		}
		if v.HaltedSet && v.Halted && vs.State == "running" {
			vs.State = "halted"
		}
		st.VCPUs = append(st.VCPUs, vs)
	}
	if b := r.Balloon; b != nil {
		m := &st.Memory
		m.BalloonCurrent = kib(b.CurrentSet, b.Current)
		m.BalloonMaximum = kib(b.MaximumSet, b.Maximum)
		// "actual" in virDomainMemoryStats is the balloon's current size.
		m.Actual = m.BalloonCurrent
		m.Unused = kib(b.UnusedSet, b.Unused)
		m.Available = kib(b.AvailableSet, b.Available)
		m.Usable = kib(b.UsableSet, b.Usable)
		m.RSS = kib(b.RssSet, b.Rss)
		m.DiskCaches = kib(b.DiskCachesSet, b.DiskCaches)
		m.SwapIn = kib(b.SwapInSet, b.SwapIn)
		m.SwapOut = kib(b.SwapOutSet, b.SwapOut)
		m.MajorFaults = count(b.MajorFaultSet, b.MajorFault)
		m.MinorFaults = count(b.MinorFaultSet, b.MinorFault)
		m.HugetlbAlloc = count(b.HugetlbPgAllocSet, b.HugetlbPgAlloc)
		m.HugetlbFail = count(b.HugetlbPgFailSet, b.HugetlbPgFail)
		if b.LastUpdateSet {
			m.LastUpdate = hypervisor.Some(int64(b.LastUpdate))
		}
	}
	for _, n := range r.Net {
		st.Net = append(st.Net, hypervisor.NetStats{
			Name:      n.Name,
			RxBytes:   count(n.RxBytesSet, n.RxBytes),
			RxPackets: count(n.RxPktsSet, n.RxPkts),
			RxErrors:  count(n.RxErrsSet, n.RxErrs),
			RxDropped: count(n.RxDropSet, n.RxDrop),
			TxBytes:   count(n.TxBytesSet, n.TxBytes),
			TxPackets: count(n.TxPktsSet, n.TxPkts),
			TxErrors:  count(n.TxErrsSet, n.TxErrs),
			TxDropped: count(n.TxDropSet, n.TxDrop),
		})
	}
	for _, b := range r.Block {
		if b.BackingIndexSet && b.BackingIndex != 0 {
			continue // backing-chain layers (only with the BACKING flag)
		}
		st.Block = append(st.Block, hypervisor.BlockStats{
			Name:       b.Name,
			Path:       b.Path,
			ReadReqs:   count(b.RdReqsSet, b.RdReqs),
			ReadBytes:  count(b.RdBytesSet, b.RdBytes),
			ReadTime:   nanos(b.RdTimesSet, b.RdTimes),
			WriteReqs:  count(b.WrReqsSet, b.WrReqs),
			WriteBytes: count(b.WrBytesSet, b.WrBytes),
			WriteTime:  nanos(b.WrTimesSet, b.WrTimes),
			FlushReqs:  count(b.FlReqsSet, b.FlReqs),
			FlushTime:  nanos(b.FlTimesSet, b.FlTimes),
			Allocation: count(b.AllocationSet, b.Allocation),
			Capacity:   count(b.CapacitySet, b.Capacity),
			Physical:   count(b.PhysicalSet, b.Physical),
		})
	}
	if dr := r.DirtyRate; dr != nil {
		// Only a finished calculation is a measurement; before the first
		// one QEMU reports status "unstarted" with a rate of 0.
		if dr.CalcStatusSet && lv.DomainDirtyRateStatus(dr.CalcStatus) == lv.DOMAIN_DIRTYRATE_MEASURED &&
			dr.MegabytesPerSecondSet && dr.MegabytesPerSecond >= 0 {
			st.DirtyRate = hypervisor.Some(uint64(dr.MegabytesPerSecond) << 20)
		}
	}
	return st
}

func vcpuState(s lv.VcpuState) string {
	switch s {
	case lv.VCPU_OFFLINE:
		return "offline"
	case lv.VCPU_RUNNING:
		return "running"
	case lv.VCPU_BLOCKED:
		return "blocked"
	}
	return ""
}

func nanos(set bool, v uint64) hypervisor.Measured[time.Duration] {
	if !set {
		return hypervisor.Measured[time.Duration]{}
	}
	return hypervisor.Some(time.Duration(v))
}

func millis(set bool, v uint64) hypervisor.Measured[time.Duration] {
	if !set {
		return hypervisor.Measured[time.Duration]{}
	}
	return hypervisor.Some(time.Duration(v) * time.Millisecond)
}

func kib(set bool, v uint64) hypervisor.Measured[uint64] {
	if !set {
		return hypervisor.Measured[uint64]{}
	}
	return hypervisor.Some(v * 1024)
}

func count(set bool, v uint64) hypervisor.Measured[uint64] {
	if !set {
		return hypervisor.Measured[uint64]{}
	}
	return hypervisor.Some(v)
}
