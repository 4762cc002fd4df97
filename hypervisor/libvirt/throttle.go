//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

// maxMonitorReply bounds the QEMU monitor reply SetThrottle reads.
const maxMonitorReply = 64 << 10

// throttleJob is a migration job started with MigrationParams.AutoConverge.
// QEMU's auto-converge then runs for the whole job, and SetThrottle steers
// it. A job started without auto-converge is a plain migrationJob: QEMU
// cannot switch the capability on while a migration runs, and without it
// nothing in QEMU 7.2 throttles vCPUs.
type throttleJob struct {
	*migrationJob
}

var _ hypervisor.Throttler = (*throttleJob)(nil)

// SetThrottle steers QEMU's auto-converge towards percent (0..99).
//
// QEMU has no call that sets the throttle directly: its
// cpu-throttle-percentage is read-only (query-migrate), and the throttle
// changes only when auto-converge triggers at a bitmap sync (periods of at
// least a second in which the guest dirtied more than the trigger
// threshold of what was sent, twice in a row). SetThrottle therefore sets,
// through the QEMU monitor (migrate-set-parameters), the trigger threshold
// to 1 %, and initial and maximum throttle to percent with an increment of
// 99: the next trigger moves the throttle to percent from any level, and
// later ones keep it there. The throttle QEMU applies shows up in
// JobStats.AutoConvergeThrottle (libvirt's auto_converge_throttle) a sync
// or two later. QEMU's lowest throttle is 1 %: once throttling has begun,
// percent 0 brings it down to 1 %, not off.
//
// The cost: libvirt cannot model a raw monitor command, so it marks the
// domain tainted ("custom-monitor" in its log and the domain's QEMU log).
// The taint is a support flag; the guest and the migration are unaffected.
func (j *throttleJob) SetThrottle(ctx context.Context, percent int) error {
	cmd, err := throttleCommand(percent)
	if err != nil {
		return hypervisor.WrapDomain("set throttle", j.name, err)
	}
	if j.ended() {
		return j.noJob("set throttle")
	}
	if j.postCopy.Load() {
		return hypervisor.WrapDomain("set throttle", j.name,
			fmt.Errorf("migration is in post-copy mode; QEMU no longer throttles: %w", hypervisor.ErrInvalidState))
	}
	reply, err := withDomain(ctx, j.h, "set throttle", j.name, func(_ *lv.Connect, d *lv.Domain) (string, error) {
		return d.QemuMonitorCommand(cmd, lv.DOMAIN_QEMU_MONITOR_COMMAND_DEFAULT)
	})
	if err != nil {
		return j.settle(ctx, "set throttle", err)
	}
	if err := monitorError(reply); err != nil {
		return hypervisor.WrapDomain("set throttle", j.name, err)
	}
	return nil
}

// throttleCommand is the QMP command that steers auto-converge to percent.
func throttleCommand(percent int) (string, error) {
	if percent < 0 || percent > 99 {
		return "", fmt.Errorf("throttle %d%% not in [0, 99]: %w", percent, hypervisor.ErrInvalidArgument)
	}
	p := max(percent, 1)
	b, err := json.Marshal(map[string]any{
		"execute": "migrate-set-parameters",
		"arguments": map[string]int{
			"throttle-trigger-threshold": 1,
			"cpu-throttle-initial":       p,
			"cpu-throttle-increment":     99,
			"max-cpu-throttle":           p,
		},
	})
	return string(b), err
}

// monitorError returns the error a QMP reply carries, if any.
func monitorError(reply string) error {
	if len(reply) > maxMonitorReply {
		return fmt.Errorf("QEMU monitor reply of %d bytes exceeds %d", len(reply), maxMonitorReply)
	}
	var r struct {
		Return *json.RawMessage `json:"return"`
		Error  *struct {
			Class string `json:"class"`
			Desc  string `json:"desc"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(reply), &r); err != nil {
		return fmt.Errorf("QEMU monitor reply %q: %w", truncate(reply, 200), err)
	}
	if r.Error != nil {
		return fmt.Errorf("QEMU refused: %s: %s", r.Error.Class, truncate(r.Error.Desc, 500))
	}
	if r.Return == nil {
		return fmt.Errorf("QEMU monitor reply %q has neither return nor error", truncate(reply, 200))
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// MigrationCapabilities reports what migrations through libvirt offer:
// no direct throttle (only QEMU's auto-converge, enabled at the start and
// steerable during the job, see throttleJob.SetThrottle), no dirty-rate
// measurement during a job (libvirt runs calc-dirty-rate as a modifying
// job, which waits for the migration to end and gives up after 30 s:
// "cannot acquire state change lock (held by
// monitor=remoteDispatchDomainMigratePerform3Params)", libvirt 11.3 with
// QEMU 10.0), and a job dirty rate that means nothing before QEMU's first
// bitmap sync after setup (Stats leaves it unmeasured there). QEMU sends
// the stop-and-copy phase without the job's bandwidth cap. QEMU 9.2 and
// later sync the dirty bitmap every 5 s in jobs with auto-converge once
// the first pass has ended (BackgroundSyncPeriod), so the job's dirty rate
// is refreshed within 5 s even during a long pass; the version is QEMU's
// as libvirt reports it. A daemon that cannot say its version gets the
// capabilities of an older QEMU, not an error: they only inform the plan.
func (h *Hypervisor) MigrationCapabilities(ctx context.Context) (hypervisor.MigrationCapabilities, error) {
	caps := hypervisor.MigrationCapabilities{StopCopyUncapped: true}
	v, err := call(ctx, h, func(c *lv.Connect) (uint32, error) { return c.GetVersion() })
	if err != nil {
		if ctx.Err() != nil {
			return caps, ctx.Err()
		}
		h.log.Debug("libvirt: hypervisor version unknown; migration capabilities of QEMU before 9.2", "err", err)
		return caps, nil
	}
	caps.BackgroundSyncPeriod = backgroundSyncPeriod(v)
	return caps, nil
}

// qemuBackgroundSync is the first QEMU (libvirt's version number,
// major*1e6 + minor*1e3 + micro) whose auto-converge syncs the dirty bitmap
// in the background: 9.2.0.
const qemuBackgroundSync = 9_002_000

// backgroundSyncPeriod is QEMU's background bitmap sync period under
// auto-converge for QEMU version v (0 = none).
func backgroundSyncPeriod(v uint32) time.Duration {
	if v >= qemuBackgroundSync {
		return 5 * time.Second
	}
	return 0
}

var _ hypervisor.MigrationCapabilityReporter = (*Hypervisor)(nil)
