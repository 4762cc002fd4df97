package sim

// Storage copy during a migration (libvirt's non-shared-disk migration with
// a migrate_disks list): before memory moves, the listed disks are copied
// to the storage the destination XML gives them, at the link's rate, while
// the guest keeps writing. A block the guest writes behind the copy's
// front has to be sent again; once the copy has caught up the mirror is
// synchronised (every later write goes to both sides) and memory
// pre-copy begins. When the guest switches over, the disks' bytes are in
// the destination files.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// diskCopy is one disk a migration copies.
type diskCopy struct {
	target   string // the device, "vdb"
	src, dst string // the source and destination files
	size     float64
	absent   bool // the source file does not exist
}

// storageCopy is the storage part of a migration job.
type storageCopy struct {
	disks     []diskCopy
	total     float64 // bytes of every copied disk
	pending   float64 // bytes still to send (the copy's front plus re-dirtied blocks)
	processed float64
	synced    bool // the mirror caught up: memory pre-copy runs
}

// planStorageCopy pairs each of params.CopyDisks with its source file (in
// src, the running definition) and destination file (in dst, the
// destination XML's definition) and measures the sources. It does file
// I/O: call it without the host's lock.
func planStorageCopy(params hypervisor.MigrationParams, src, dst *spec) (*storageCopy, error) {
	if len(params.CopyDisks) == 0 {
		return nil, nil
	}
	if params.DestinationXML == "" {
		return nil, invalid("params.copyDisks", "set without params.destinationXML giving the disks their new storage")
	}
	path := func(s *spec, target string) string {
		for _, d := range s.disks {
			if d.target == target {
				return d.path
			}
		}
		return ""
	}
	sc := &storageCopy{}
	seen := map[string]bool{}
	for i, t := range params.CopyDisks {
		field := fmt.Sprintf("params.copyDisks[%d]", i)
		if seen[t] {
			return nil, invalid(field, fmt.Sprintf("disk %q listed twice", t))
		}
		seen[t] = true
		c := diskCopy{target: t, src: path(src, t), dst: path(dst, t)}
		if c.src == "" {
			return nil, invalid(field, fmt.Sprintf("the domain has no file-backed disk %q", t))
		}
		if c.dst == "" {
			return nil, invalid(field, fmt.Sprintf("the destination XML has no file-backed disk %q", t))
		}
		// The simulator runs disks whose files do not exist (it defines
		// domains without opening their disks): such a disk holds no
		// data and copies as empty.
		st, err := os.Stat(c.src)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			c.absent = true
		case err != nil:
			return nil, fmt.Errorf("%s: source of disk %q: %w", field, t, err)
		default:
			c.size = float64(st.Size())
		}
		// A destination that exists (a claim filled before, on the
		// target's local storage or a shared class) must hold the whole
		// disk: the mirror writes every block at its offset.
		if dst, err := os.Stat(c.dst); err == nil && c.dst != c.src && float64(dst.Size()) < c.size {
			return nil, invalid(field, fmt.Sprintf("the destination of disk %q (%d bytes) is smaller than its source (%d bytes)", t, dst.Size(), int64(c.size)))
		}
		sc.disks = append(sc.disks, c)
		sc.total += c.size
	}
	sc.pending = sc.total
	sc.synced = sc.total == 0
	return sc, nil
}

// copyStorage advances the storage copy over [t, t+dt) at bandwidth bw
// (bytes/s); d is the source domain. The guest's writes (Workload.DiskRate,
// slowed by the throttle) land uniformly over the copied disks: the share
// behind the copy's front must be sent again.
func (j *job) copyStorage(d *domain, bw float64, t time.Time, dt time.Duration) {
	s := j.storage
	end := t.Add(dt)
	secs := dt.Seconds()
	sent := math.Min(s.pending, j.allowance(bw*secs))
	s.pending -= sent
	s.processed += sent
	if d.running() && s.total > 0 {
		written := float64(d.workload.DiskRate) * secs * (1 - d.throttle)
		copied := (s.total - s.pending) / s.total
		s.pending = math.Min(s.total, s.pending+written*copied)
	}
	j.windowBytes += sent
	if w := end.Sub(j.windowStart); w >= bandwidthWindow {
		j.bwEstimate = j.windowBytes / w.Seconds()
		j.windowBytes, j.windowStart = 0, end
	}
	// The mirror is ready once what is left fits in one step: from then
	// on the guest's writes are mirrored as they happen.
	if s.pending <= bw*stepSize.Seconds() {
		s.processed += s.pending
		s.pending = 0
		s.synced = true
		// Memory migration starts now: its dirty tracking and its rate
		// estimates begin here.
		j.periodStart, j.windowStart, j.windowBytes = end, end, 0
		j.tracker = newTracker(&d.model, end)
	}
}

// storageStats adds the disks to a job's counters (libvirt's disk_* and
// data_* fields).
func (j *job) storageStats(st *hypervisor.JobStats) {
	s := j.storage
	if s == nil {
		return
	}
	st.DiskTotal = hypervisor.Some(uint64(s.total))
	st.DiskProcessed = hypervisor.Some(uint64(s.processed))
	st.DiskRemaining = hypervisor.Some(uint64(math.Ceil(s.pending)))
	st.DataTotal = hypervisor.Some(st.DataTotal.Value + uint64(s.total))
	st.DataProcessed = hypervisor.Some(st.DataProcessed.Value + uint64(s.processed))
	st.DataRemaining = hypervisor.Some(st.DataRemaining.Value + uint64(math.Ceil(s.pending)))
}

// writeDestinations puts every copied disk's bytes into its destination
// file: what the synchronised mirror holds when the guest switches over.
// It does file I/O: call it without the host's lock.
func (s *storageCopy) writeDestinations() error {
	if s == nil {
		return nil
	}
	for _, c := range s.disks {
		if c.src == c.dst || c.absent {
			continue
		}
		if err := copyFile(c.src, c.dst); err != nil {
			return fmt.Errorf("copying disk %s to %s: %w", c.target, c.dst, err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
