package sim

import (
	"context"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// setWorkloadModel resolves the workload against the memory of the
// instance, keeping the bytes trackers counted so far.
func (d *domain) setWorkloadModel(now time.Time) {
	old := d.model
	d.model = newModel(d.workload, d.spec().curMemory, now)
	for _, tr := range d.trackers {
		tr.rebase(&old, &d.model)
	}
	if d.job != nil && d.job.tracker != nil {
		d.job.tracker.rebase(&old, &d.model)
	}
}

func workingSetOf(d *domain) uint64 {
	if d.workload.DirtyRate == 0 {
		return 0
	}
	if d.workload.WorkingSet == 0 {
		return d.spec().curMemory
	}
	return d.workload.WorkingSet
}

// SetWorkload sets what the guest does to its memory; it applies at once to
// a running guest and to every later start.
func (h *Host) SetWorkload(name string, w Workload) error {
	return h.do(context.Background(), func(now time.Time) error {
		d, err := h.lookup("set workload", name)
		if err != nil {
			return err
		}
		if err := w.Validate(d.spec().curMemory); err != nil {
			return hypervisor.WrapDomain("set workload", name, err)
		}
		d.workload = w
		d.setWorkloadModel(now)
		return nil
	})
}
