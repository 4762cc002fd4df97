package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// Stats returns the domain's counters; a shut-off domain has only its state.
func (h *Host) Stats(ctx context.Context, name string) (hypervisor.DomainStats, error) {
	var st hypervisor.DomainStats
	err := h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("stats", name)
		if err != nil {
			return err
		}
		st = stats(d, now)
		return nil
	})
	return st, err
}

func stats(d *domain, now time.Time) hypervisor.DomainStats {
	st := hypervisor.DomainStats{Domain: d.name(), Collected: now, State: d.state, Reason: d.reason, DirtyRate: d.dirtyRate}
	if !d.state.IsActive() {
		return st
	}
	sp := d.spec()
	cpu := time.Duration(d.cpu)
	st.CPUTime = hypervisor.Some(cpu)
	st.CPUUser = hypervisor.Some(cpu * 7 / 10)
	st.CPUSystem = hypervisor.Some(cpu - cpu*7/10)
	for i := range sp.vcpus {
		vstate := "running"
		if !d.running() {
			vstate = "halted"
		}
		// The model has no host-CPU contention and no guest I/O wait, so
		// libvirt's vcpu.N.wait and vcpu.N.delay are measured zeros.
		st.VCPUs = append(st.VCPUs, hypervisor.VCPUStats{ID: i, State: vstate, Time: hypervisor.Some(cpu / time.Duration(sp.vcpus)),
			Wait: hypervisor.Some[time.Duration](0), Delay: hypervisor.Some[time.Duration](0)})
	}
	mem := sp.curMemory
	used := residentOf(d)
	st.Memory = hypervisor.MemoryStats{
		BalloonCurrent: hypervisor.Some(mem),
		BalloonMaximum: hypervisor.Some(sp.maxMemory),
		Actual:         hypervisor.Some(mem),
		Available:      hypervisor.Some(mem),
		Unused:         hypervisor.Some(mem - used),
		Usable:         hypervisor.Some(mem - used),
		RSS:            hypervisor.Some(used),
		DiskCaches:     hypervisor.Some(min(mem-used, uint64(d.blkBytes))),
		SwapIn:         hypervisor.Some[uint64](0),
		SwapOut:        hypervisor.Some[uint64](0),
		MajorFaults:    hypervisor.Some(uint64(d.faults / 100)),
		MinorFaults:    hypervisor.Some(uint64(d.faults)),
		LastUpdate:     hypervisor.Some(now.Unix()),
	}
	for i := range sp.interfaces {
		b := uint64(d.netBytes)
		st.Net = append(st.Net, hypervisor.NetStats{
			Name:    fmt.Sprintf("vnet%d", i),
			RxBytes: hypervisor.Some(b), RxPackets: hypervisor.Some(b / 1000),
			RxErrors: hypervisor.Some[uint64](0), RxDropped: hypervisor.Some[uint64](0),
			TxBytes: hypervisor.Some(b / 2), TxPackets: hypervisor.Some(b / 2000),
			TxErrors: hypervisor.Some[uint64](0), TxDropped: hypervisor.Some[uint64](0),
		})
	}
	for _, disk := range sp.disks {
		b := uint64(d.blkBytes)
		// Times as libvirt reports them (rd/wr/fl.times), at the model's
		// disk throughput; one flush per 16 writes.
		flushes := b / 8192 / 16
		st.Block = append(st.Block, hypervisor.BlockStats{
			Name: disk.target, Path: disk.path,
			ReadReqs: hypervisor.Some(b / 4096), ReadBytes: hypervisor.Some(b),
			WriteReqs: hypervisor.Some(b / 8192), WriteBytes: hypervisor.Some(b / 2),
			ReadTime:  hypervisor.Some(diskTime(b)),
			WriteTime: hypervisor.Some(diskTime(b / 2)),
			FlushReqs: hypervisor.Some(flushes),
			FlushTime: hypervisor.Some(time.Duration(flushes) * simFlushTime),
		})
	}
	return st
}

// The model's disk: 500 MB/s, 1 ms per flush.
const (
	simDiskBytesPerSecond = 500e6
	simFlushTime          = time.Millisecond
)

// diskTime is how long the model's disk takes to move n bytes.
func diskTime(n uint64) time.Duration {
	return time.Duration(float64(n) / simDiskBytesPerSecond * float64(time.Second))
}
