//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

// runningJob is the job statistics libvirt 9.0 reported for a 128 MiB TCG
// guest dirtying 40 MiB/s, migrating at 8 MiB/s with auto-converge (the
// figures of `virsh domjobinfo` on the real stack), at a given pass.
func runningJob(iteration, dirtyPages uint64, throttle int) *lv.DomainJobInfo {
	info := &lv.DomainJobInfo{
		Type:           lv.DOMAIN_JOB_UNBOUNDED,
		TimeElapsedSet: true, TimeElapsed: 16205,
		DataTotalSet: true, DataTotal: 134750208,
		DataProcessedSet: true, DataProcessed: 129760256,
		DataRemainingSet: true, DataRemaining: 27497267,
		MemTotalSet: true, MemTotal: 134750208,
		MemProcessedSet: true, MemProcessed: 129760256,
		MemRemainingSet: true, MemRemaining: 27497267,
		MemBpsSet: true, MemBps: 8428000,
		MemDirtyRateSet: true, MemDirtyRate: dirtyPages,
		MemPageSizeSet: true, MemPageSize: 4096,
		MemIterationSet: true, MemIteration: iteration,
		DowntimeSet: true, Downtime: 300,
		SetupTimeSet: true, SetupTime: 4,
	}
	if throttle > 0 {
		info.AutoConvergeThrottleSet, info.AutoConvergeThrottle = true, throttle
	}
	return info
}

func TestConvertJobStatsDirtyRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		info *lv.DomainJobInfo
		want hypervisor.Measured[uint64]
	}{
		// libvirt sends memory_dirty_rate=0 from the start; QEMU has not
		// synced the bitmap after setup yet, so 0 is no measurement.
		{"first pass: the 0 is a placeholder", runningJob(1, 0, 0), hypervisor.Measured[uint64]{}},
		{"first pass with a stale nonzero value", runningJob(1, 512, 0), hypervisor.Measured[uint64]{}},
		{"second pass: measured", runningJob(2, 720, 0), hypervisor.Some(uint64(720 * 4096))},
		{"a measured zero after a sync is an idle guest", runningJob(3, 0, 0), hypervisor.Some(uint64(0))},
		{"no iteration reported: not measured", func() *lv.DomainJobInfo {
			i := runningJob(2, 720, 0)
			i.MemIterationSet, i.MemIteration = false, 0
			return i
		}(), hypervisor.Measured[uint64]{}},
		{"no page size: 4 KiB pages", func() *lv.DomainJobInfo {
			i := runningJob(2, 720, 0)
			i.MemPageSizeSet, i.MemPageSize = false, 0
			return i
		}(), hypervisor.Some(uint64(720 * 4096))},
		{"2 MiB pages", func() *lv.DomainJobInfo {
			i := runningJob(4, 3, 0)
			i.MemPageSize = 2 << 20
			return i
		}(), hypervisor.Some(uint64(6 << 20))},
		{"rate not sent", func() *lv.DomainJobInfo {
			i := runningJob(4, 0, 0)
			i.MemDirtyRateSet = false
			return i
		}(), hypervisor.Measured[uint64]{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := convertJobStats(tc.info, false)
			assert.Equal(t, tc.want, st.MemoryDirtyRate)
			assert.Equal(t, tc.info.MemIterationSet, st.MemoryIteration.Valid, "the iteration itself is passed on")
		})
	}
}

func TestConvertJobStatsFields(t *testing.T) {
	st := convertJobStats(runningJob(4, 2045, 60), false)
	assert.Equal(t, hypervisor.JobUnbounded, st.Type)
	assert.Equal(t, hypervisor.ModePreCopy, st.Mode)
	assert.Equal(t, hypervisor.Some(16205*time.Millisecond), st.Elapsed)
	assert.Equal(t, hypervisor.Some(uint64(27497267)), st.MemoryRemaining)
	assert.Equal(t, hypervisor.Some(uint64(8428000)), st.MemoryBps)
	assert.Equal(t, hypervisor.Some(uint64(4)), st.MemoryIteration)
	assert.Equal(t, hypervisor.Some(300*time.Millisecond), st.Downtime)
	assert.Equal(t, hypervisor.Some(int64(60)), st.AutoConvergeThrottle, "auto_converge_throttle reads back QEMU's throttle")
	assert.False(t, convertJobStats(runningJob(4, 2045, 0), false).AutoConvergeThrottle.Valid, "no throttle sent: not measured")
	assert.Equal(t, hypervisor.ModePostCopy, convertJobStats(runningJob(4, 2045, 0), true).Mode)
	pc := runningJob(4, 0, 0)
	pc.MemPostcopyReqsSet, pc.MemPostcopyReqs = true, 17
	assert.Equal(t, hypervisor.ModePostCopy, convertJobStats(pc, false).Mode, "page requests mean post-copy")
	assert.Equal(t, hypervisor.JobCompleted, convertJobStats(&lv.DomainJobInfo{Type: lv.DOMAIN_JOB_COMPLETED}, false).Type)

	assert.False(t, st.MemoryConstant.Valid, "memory_constant not sent: not measured")
	zp := runningJob(2, 0, 0)
	zp.MemConstantSet, zp.MemConstant = true, 38000
	assert.Equal(t, hypervisor.Some(uint64(38000*4096)), convertJobStats(zp, false).MemoryConstant, "constant pages become bytes")
}

func TestThrottleCommand(t *testing.T) {
	for _, tc := range []struct {
		percent   int
		wantLevel int
		wantErr   bool
	}{
		{percent: 60, wantLevel: 60},
		{percent: 99, wantLevel: 99},
		{percent: 1, wantLevel: 1},
		{percent: 0, wantLevel: 1}, // QEMU's floor once throttling began
		{percent: -1, wantErr: true},
		{percent: 100, wantErr: true},
	} {
		cmd, err := throttleCommand(tc.percent)
		if tc.wantErr {
			require.ErrorIs(t, err, hypervisor.ErrInvalidArgument, "percent %d", tc.percent)
			continue
		}
		require.NoError(t, err)
		var got struct {
			Execute   string         `json:"execute"`
			Arguments map[string]int `json:"arguments"`
		}
		require.NoError(t, json.Unmarshal([]byte(cmd), &got))
		assert.Equal(t, "migrate-set-parameters", got.Execute)
		assert.Equal(t, map[string]int{
			"throttle-trigger-threshold": 1,
			"cpu-throttle-initial":       tc.wantLevel,
			"cpu-throttle-increment":     99,
			"max-cpu-throttle":           tc.wantLevel,
		}, got.Arguments, "percent %d", tc.percent)
	}
}

func TestMonitorError(t *testing.T) {
	require.NoError(t, monitorError(`{"return":{},"id":"libvirt-432"}`))
	err := monitorError(`{"id":"libvirt-413","error":{"class":"GenericError","desc":"Parameter 'cpu-throttle-percentage' is unexpected"}}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "GenericError: Parameter 'cpu-throttle-percentage' is unexpected")
	assert.Error(t, monitorError(`{"id":"x"}`), "neither return nor error")
	assert.Error(t, monitorError(`not json`))
	big := make([]byte, maxMonitorReply+1)
	assert.Error(t, monitorError(string(big)))
}
