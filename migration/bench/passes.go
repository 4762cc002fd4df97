package bench

import (
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// Pass is where one pre-copy iteration began, as a sampler of the job's
// stats first saw it: the remaining data then is (within one sampling
// period at the job's speed) the dirty set QEMU's bitmap sync found, and
// the data sent then is what the earlier iterations carried.
type Pass struct {
	// Iteration is QEMU's memory iteration (bitmap syncs, from 1).
	Iteration uint64 `json:"iteration"`
	// Seconds is the time from the job's start.
	Seconds        float64 `json:"seconds"`
	RemainingBytes uint64  `json:"remainingBytes"`
	SentBytes      uint64  `json:"sentBytes"`
	// ConstantBytes is the memory the job had found filled with one byte
	// value by then (zero pages: in the remaining data until a pass
	// reaches them, sent as a header each); 0 when not reported.
	ConstantBytes uint64 `json:"constantBytes,omitempty"`
	// DirtyRate is the job's dirty rate then, bytes/s, as QEMU computed it
	// at its last bitmap sync; nil before it has measured one.
	DirtyRate *uint64 `json:"dirtyRate,omitempty"`
}

// PassRecorder turns job stats sampled at a fine period into the job's
// passes. The zero value is ready; it is not safe for concurrent use.
type PassRecorder struct {
	passes []Pass
}

// Observe records st, taken at elapsed from the job's start, when it is
// the first sample of a new iteration during pre-copy.
func (r *PassRecorder) Observe(elapsed time.Duration, st hypervisor.JobStats) {
	if st.Type != hypervisor.JobUnbounded || st.Mode == hypervisor.ModePostCopy {
		return
	}
	it, ok := st.MemoryIteration.Get()
	if !ok || (len(r.passes) > 0 && it <= r.passes[len(r.passes)-1].Iteration) {
		return
	}
	rem, ok := st.DataRemaining.Get()
	if !ok {
		rem, ok = st.MemoryRemaining.Get()
	}
	if !ok {
		return
	}
	p := Pass{
		Iteration: it, Seconds: round(elapsed.Seconds(), 3),
		RemainingBytes: rem, SentBytes: st.DataProcessed.Or(st.MemoryProcessed.Or(0)),
		ConstantBytes: st.MemoryConstant.Or(0),
	}
	if v, ok := st.MemoryDirtyRate.Get(); ok {
		p.DirtyRate = &v
	}
	r.passes = append(r.passes, p)
}

// Passes returns what was recorded.
func (r *PassRecorder) Passes() []Pass { return r.passes }
