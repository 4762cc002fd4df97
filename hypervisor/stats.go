package hypervisor

import "time"

// DomainStats are a domain's counters at one moment. Counters are cumulative
// since the domain started; anything the backend did not report stays
// invalid.
type DomainStats struct {
	Domain    string
	Collected time.Time
	State     DomainState
	Reason    StateReason

	// CPU time of the whole domain, and split into user and system.
	CPUTime   Measured[time.Duration]
	CPUUser   Measured[time.Duration]
	CPUSystem Measured[time.Duration]
	VCPUs     []VCPUStats

	Memory MemoryStats
	Net    []NetStats
	Block  []BlockStats

	// DirtyRate is the last completed dirty-rate calculation, bytes/s.
	DirtyRate Measured[uint64]
}

// VCPUStats are one vCPU's counters.
type VCPUStats struct {
	ID    int
	State string // "running", "offline", "halted"
	Time  Measured[time.Duration]
	// Wait is time spent waiting for I/O; Delay time waiting to run on a host CPU.
	Wait  Measured[time.Duration]
	Delay Measured[time.Duration]
}

// MemoryStats are balloon and guest memory statistics, in bytes (libvirt
// reports KiB; backends convert).
type MemoryStats struct {
	BalloonCurrent Measured[uint64]
	BalloonMaximum Measured[uint64]
	Actual         Measured[uint64]
	Unused         Measured[uint64]
	Available      Measured[uint64]
	Usable         Measured[uint64]
	RSS            Measured[uint64]
	DiskCaches     Measured[uint64]
	SwapIn         Measured[uint64]
	SwapOut        Measured[uint64]
	MajorFaults    Measured[uint64]
	MinorFaults    Measured[uint64]
	HugetlbAlloc   Measured[uint64]
	HugetlbFail    Measured[uint64]
	// LastUpdate is the guest's timestamp of the balloon statistics.
	LastUpdate Measured[int64]
}

// NetStats are one interface's counters.
type NetStats struct {
	Name      string // host-side device name, e.g. "vnet0"
	RxBytes   Measured[uint64]
	RxPackets Measured[uint64]
	RxErrors  Measured[uint64]
	RxDropped Measured[uint64]
	TxBytes   Measured[uint64]
	TxPackets Measured[uint64]
	TxErrors  Measured[uint64]
	TxDropped Measured[uint64]
}

// BlockStats are one disk's counters.
type BlockStats struct {
	Name       string // target, e.g. "vda"
	Path       string
	ReadReqs   Measured[uint64]
	ReadBytes  Measured[uint64]
	ReadTime   Measured[time.Duration]
	WriteReqs  Measured[uint64]
	WriteBytes Measured[uint64]
	WriteTime  Measured[time.Duration]
	FlushReqs  Measured[uint64]
	FlushTime  Measured[time.Duration]
	Allocation Measured[uint64]
	Capacity   Measured[uint64]
	Physical   Measured[uint64]
}
