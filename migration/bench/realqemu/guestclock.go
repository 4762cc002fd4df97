package realqemu

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// maxUptimeReply bounds the guest's /proc/uptime as the agent returns it.
const maxUptimeReply = 256

// guestUptime reads the guest's /proc/uptime through its agent
// (guest-exec, then guest-exec-status until the command has exited). The
// guest's reply is untrusted: its size is bounded and it must parse. An
// agent that is not connected yet (a guest that has just arrived on the
// target) is asked again until ctx ends. at is the host's time when the
// guest started the command.
func guestUptime(ctx context.Context, a hypervisor.AgentCommander, name string) (uptime time.Duration, at time.Time, err error) {
	var pid int
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		reply, err := a.AgentCommand(ctx, name, `{"execute":"guest-exec","arguments":{"path":"/bin/cat","arg":["/proc/uptime"],"capture-output":true}}`)
		if err == nil {
			var r struct {
				Return struct {
					PID *int `json:"pid"`
				} `json:"return"`
			}
			if err := json.Unmarshal([]byte(reply), &r); err != nil || r.Return.PID == nil {
				return 0, at, fmt.Errorf("guest-exec reply %.80q: no pid", reply)
			}
			pid, at = *r.Return.PID, time.Now()
			break
		}
		if !errors.Is(err, hypervisor.ErrAgentUnavailable) {
			return 0, at, fmt.Errorf("guest-exec: %w", err)
		}
		select {
		case <-ctx.Done():
			return 0, at, fmt.Errorf("guest-exec: %w", err)
		case <-time.After(delay):
		}
	}
	for {
		reply, err := a.AgentCommand(ctx, name, fmt.Sprintf(`{"execute":"guest-exec-status","arguments":{"pid":%d}}`, pid))
		if err != nil {
			return 0, at, fmt.Errorf("guest-exec-status: %w", err)
		}
		var r struct {
			Return struct {
				Exited  bool   `json:"exited"`
				OutData string `json:"out-data"`
			} `json:"return"`
		}
		if err := json.Unmarshal([]byte(reply), &r); err != nil {
			return 0, at, fmt.Errorf("guest-exec-status reply %.80q: %w", reply, err)
		}
		if r.Return.Exited {
			uptime, err := parseUptime(r.Return.OutData)
			return uptime, at, err
		}
		select {
		case <-ctx.Done():
			return 0, at, fmt.Errorf("guest-exec-status: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// parseUptime reads the first field of /proc/uptime from the agent's
// base64 output.
func parseUptime(b64 string) (time.Duration, error) {
	if len(b64) > maxUptimeReply {
		return 0, fmt.Errorf("/proc/uptime: %d bytes of output, more than %d", len(b64), maxUptimeReply)
	}
	out, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return 0, fmt.Errorf("/proc/uptime: %w", err)
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 {
		return 0, errors.New("/proc/uptime: empty")
	}
	secs, err := strconv.ParseFloat(fields[0], 64)
	if err != nil || secs < 0 || secs > 1e9 {
		return 0, fmt.Errorf("/proc/uptime: %q is not an uptime", fields[0])
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// clockCheck compares how far the guest's clock moved over a migration
// with the host's: the guest rebooted when its uptime went back, and its
// clock stood still for the difference when it moved less (a guest whose
// clock stops sleeps through its timers: its workload pauses).
type clockCheck struct {
	rebooted bool
	lost     time.Duration
}

func checkClock(before, after, hostElapsed time.Duration) clockCheck {
	if after < before {
		return clockCheck{rebooted: true}
	}
	return clockCheck{lost: max(0, hostElapsed-(after-before))}
}
