package sim_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

func diskDomainXML(memMiB int, disk string) string {
	return fmt.Sprintf(`<domain type='kvm'><name>%s</name><memory unit='MiB'>%d</memory><vcpu>2</vcpu>
<devices><disk type='file' device='disk'><source file='%s'/><target dev='vdb' bus='virtio'/></disk></devices></domain>`, vmName, memMiB, disk)
}

const (
	diskSize = 16 * MiB
	diskLink = 25 * MB
)

// storageJob starts a migration of a 64 MiB guest whose 16 MiB disk vdb
// is copied from src.img to dst.img over a 25 MB/s link.
func storageJob(t *testing.T, w sim.Workload, copyDisks bool) (src, dst *sim.Host, clock *sim.VirtualClock, job hypervisor.MigrationJob, srcDisk, dstDisk string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	srcDisk, dstDisk = filepath.Join(dir, "src.img"), filepath.Join(dir, "dst.img")
	data := bytes.Repeat([]byte("virtkit!"), diskSize/8)
	require.NoError(t, os.WriteFile(srcDisk, data, 0o600))
	clock = sim.NewVirtualClock(epoch)
	src, dst = hostPair(t, clock, sim.Link{Bandwidth: diskLink})
	_, err := src.Define(ctx, diskDomainXML(64, srcDisk))
	require.NoError(t, err)
	require.NoError(t, src.Start(ctx, vmName, hypervisor.StartOptions{}))
	require.NoError(t, src.SetWorkload(vmName, w))
	p := hypervisor.MigrationParams{DestinationURI: "dst"}
	if copyDisks {
		p.CopyDisks, p.DestinationXML = []string{"vdb"}, diskDomainXML(64, dstDisk)
	}
	job, err = src.StartMigration(ctx, vmName, p)
	require.NoError(t, err)
	return src, dst, clock, job, srcDisk, dstDisk
}

func finish(t *testing.T, clock *sim.VirtualClock, job hypervisor.MigrationJob) hypervisor.MigrationResult {
	t.Helper()
	for range 120 {
		select {
		case <-job.Done():
			res, err := job.Result(context.Background())
			require.NoError(t, err)
			return res
		default:
			clock.Advance(500 * time.Millisecond)
		}
	}
	t.Fatal("migration did not end within 60 s of simulated time")
	return hypervisor.MigrationResult{}
}

// The disk's bytes travel the link before memory, and what the guest
// wrote during the copy is in the destination file when it switches over.
func TestMigrationCopiesDisks(t *testing.T) {
	ctx := context.Background()
	_, _, clockPlain, plain, _, _ := storageJob(t, sim.Workload{}, false)
	base := finish(t, clockPlain, plain)

	src, dst, clock, job, srcDisk, dstDisk := storageJob(t, sim.Workload{}, true)
	clock.Advance(200 * time.Millisecond)
	st, err := job.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(diskSize), st.DiskTotal.Value)
	assert.Positive(t, st.DiskRemaining.Value, "the copy is under way")
	assert.Equal(t, st.MemoryRemaining.Value, st.MemoryTotal.Value, "memory waits for the disks")
	require.NoError(t, src.WriteDisk(ctx, vmName, "vdb", 4096, []byte("written during the copy")))

	res := finish(t, clock, job)
	assert.True(t, res.Succeeded)
	assert.Equal(t, uint64(diskSize), res.Stats.DiskProcessed.Value)
	extra := res.Ended.Sub(res.Started) - base.Ended.Sub(base.Started)
	assert.InDelta(t, float64(diskSize)/diskLink, extra.Seconds(), 0.05,
		"the copy adds the disk's size at the link's rate")

	want, err := os.ReadFile(srcDisk)
	require.NoError(t, err)
	got, err := os.ReadFile(dstDisk)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got), "the destination holds the source's bytes")
	assert.Contains(t, string(got[4096:4200]), "written during the copy")
	x, err := dst.XML(ctx, vmName)
	require.NoError(t, err)
	assert.Contains(t, x, dstDisk, "the target runs on the new storage")
}

// Blocks the guest writes behind the copy's front are sent again: with
// the guest writing w bytes/s uniformly over a disk of T bytes and a link
// of b bytes/s, the copy's backlog P follows dP/dt = -b + w(T-P)/T and the
// mirror is ready after (T/w) ln(b/(b-w)), not T/b.
func TestMigrationDiskCopyResendsDirtyBlocks(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate uint64
	}{
		{name: "idle disk", rate: 0},
		{name: "writing at 30 % of the link", rate: diskLink * 3 / 10},
		{name: "writing at 60 % of the link", rate: diskLink * 6 / 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, clock, job, _, _ := storageJob(t, sim.Workload{DiskRate: tc.rate}, true)
			res := finish(t, clock, job)
			require.True(t, res.Succeeded)
			copyTime := float64(res.Stats.DiskProcessed.Value) / diskLink
			want := float64(diskSize) / diskLink
			if w := float64(tc.rate); w > 0 {
				want = float64(diskSize) / w * math.Log(diskLink/(diskLink-w))
			}
			assert.InDelta(t, want, copyTime, 0.02, "seconds of copying")
		})
	}
}

// An aborted copy leaves the guest running on its old disk and writes
// nothing to the new storage.
func TestMigrationDiskCopyAbort(t *testing.T) {
	ctx := context.Background()
	src, _, clock, job, _, dstDisk := storageJob(t, sim.Workload{}, true)
	clock.Advance(200 * time.Millisecond)
	require.NoError(t, job.Abort(ctx))
	clock.Advance(100 * time.Millisecond)
	_, err := job.Result(ctx)
	require.ErrorIs(t, err, hypervisor.ErrMigrationAborted)
	info, err := src.Info(ctx, vmName)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State)
	_, err = os.Stat(dstDisk)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestMigrationCopyDisksErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	disk := filepath.Join(dir, "a.img")
	require.NoError(t, os.WriteFile(disk, make([]byte, 4096), 0o600))
	small := filepath.Join(dir, "small.img")
	require.NoError(t, os.WriteFile(small, make([]byte, 1024), 0o600))
	for _, tc := range []struct {
		name    string
		p       hypervisor.MigrationParams
		wantErr string
	}{
		{name: "no destination XML", p: hypervisor.MigrationParams{CopyDisks: []string{"vdb"}}, wantErr: "params.copyDisks"},
		{name: "unknown disk", p: hypervisor.MigrationParams{CopyDisks: []string{"vdz"}, DestinationXML: diskDomainXML(64, disk)}, wantErr: "params.copyDisks[0]"},
		{name: "destination smaller than the source", p: hypervisor.MigrationParams{CopyDisks: []string{"vdb"}, DestinationXML: diskDomainXML(64, small)},
			wantErr: "smaller than its source"},
		{name: "listed twice", p: hypervisor.MigrationParams{CopyDisks: []string{"vdb", "vdb"}, DestinationXML: diskDomainXML(64, disk)}, wantErr: "params.copyDisks[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := sim.NewVirtualClock(epoch)
			src, _ := hostPair(t, clock, sim.Link{})
			_, err := src.Define(ctx, diskDomainXML(64, disk))
			require.NoError(t, err)
			require.NoError(t, src.Start(ctx, vmName, hypervisor.StartOptions{}))
			tc.p.DestinationURI = "dst"
			_, err = src.StartMigration(ctx, vmName, tc.p)
			require.ErrorIs(t, err, hypervisor.ErrInvalidArgument)
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// The simulator runs disks whose files do not exist: such a disk copies as
// empty, and no destination file appears.
func TestMigrationCopiesAbsentDiskAsEmpty(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "absent.img"), filepath.Join(dir, "dst.img")
	clock := sim.NewVirtualClock(epoch)
	h, _ := hostPair(t, clock, sim.Link{Bandwidth: diskLink})
	_, err := h.Define(ctx, diskDomainXML(64, src))
	require.NoError(t, err)
	require.NoError(t, h.Start(ctx, vmName, hypervisor.StartOptions{}))
	job, err := h.StartMigration(ctx, vmName, hypervisor.MigrationParams{DestinationURI: "dst",
		CopyDisks: []string{"vdb"}, DestinationXML: diskDomainXML(64, dst)})
	require.NoError(t, err)
	res := finish(t, clock, job)
	assert.True(t, res.Succeeded)
	assert.Zero(t, res.Stats.DiskTotal.Value)
	_, err = os.Stat(dst)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
