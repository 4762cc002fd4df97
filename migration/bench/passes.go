package bench

import (
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// Pass is where one pre-copy iteration began, as a sampler of the job's
// stats first saw it, with what the sample before it showed.
//
// The first sample of a pass falls anywhere in the sampling period after
// the bitmap sync that began it, and under a bandwidth cap QEMU sends each
// 100 ms window's data in one burst as the window opens: the remaining data
// the sample shows is the pass's start less none, one or more bursts.
// [Pass.StartRemainingBytes] adds back what was sent since the sample
// before, so it does not depend on where the sample fell.
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
	// BeforeSentBytes is the data sent at the sample before this one (0
	// for the job's first sample): what the job had sent when this
	// iteration's sync came, unless it sent between that sample and the
	// sync.
	BeforeSentBytes uint64 `json:"beforeSentBytes,omitempty"`
}

// StartRemainingBytes is the data remaining when the pass began: the
// remaining data at its first sample plus what the job sent since the
// sample before. Under a cap QEMU syncs as a 100 ms window opens, before
// the window's burst, so the sample before a sync already saw the earlier
// pass's last burst, and this is the dirty set the sync found wherever
// within the period the samples fell. Constant pages found between the two
// samples are not added back: the first pass finds them before its sync,
// and later passes find almost none.
func (p Pass) StartRemainingBytes() uint64 {
	if p.SentBytes < p.BeforeSentBytes {
		return p.RemainingBytes
	}
	return p.RemainingBytes + p.SentBytes - p.BeforeSentBytes
}

// PassRecorder turns job stats sampled at a fine period into the job's
// passes. The zero value is ready; it is not safe for concurrent use.
type PassRecorder struct {
	passes []Pass
	sent   uint64 // the data sent at the last pre-copy sample
}

// Observe records st, taken at elapsed from the job's start, when it is
// the first sample of a new iteration during pre-copy.
func (r *PassRecorder) Observe(elapsed time.Duration, st hypervisor.JobStats) {
	if st.Type != hypervisor.JobUnbounded || st.Mode == hypervisor.ModePostCopy {
		return
	}
	sent := st.DataProcessed.Or(st.MemoryProcessed.Or(0))
	before := r.sent
	r.sent = sent
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
		RemainingBytes: rem, SentBytes: sent, ConstantBytes: st.MemoryConstant.Or(0),
		BeforeSentBytes: before,
	}
	if v, ok := st.MemoryDirtyRate.Get(); ok {
		p.DirtyRate = &v
	}
	r.passes = append(r.passes, p)
}

// Passes returns what was recorded.
func (r *PassRecorder) Passes() []Pass { return r.passes }
