package realqemu

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

// fakeAgent answers guest-exec and guest-exec-status as qemu-ga does,
// after refusing the first unavailable calls.
type fakeAgent struct {
	unavailable int
	status      []string // guest-exec-status replies, in order
	calls       []string
}

func (f *fakeAgent) AgentCommand(_ context.Context, _ string, cmd string) (string, error) {
	f.calls = append(f.calls, cmd)
	if strings.Contains(cmd, `"guest-exec"`) {
		if f.unavailable > 0 {
			f.unavailable--
			return "", fmt.Errorf("not connected: %w", hypervisor.ErrAgentUnavailable)
		}
		return `{"return":{"pid":42}}`, nil
	}
	r := f.status[0]
	if len(f.status) > 1 {
		f.status = f.status[1:]
	}
	return r, nil
}

func exited(out string) string {
	return fmt.Sprintf(`{"return":{"exited":true,"exitcode":0,"out-data":%q}}`, base64.StdEncoding.EncodeToString([]byte(out)))
}

func TestGuestUptime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		agent   *fakeAgent
		want    time.Duration
		wantErr string
	}{
		{"exited at once", &fakeAgent{status: []string{exited("12.34 9.80\n")}}, 12340 * time.Millisecond, ""},
		{"agent connects late, command runs a while", &fakeAgent{unavailable: 2, status: []string{`{"return":{"exited":false}}`, exited("3.00 1.00\n")}}, 3 * time.Second, ""},
		{"not an uptime", &fakeAgent{status: []string{exited("hello\n")}}, 0, `"hello" is not an uptime`},
		{"negative", &fakeAgent{status: []string{exited("-5 1\n")}}, 0, "is not an uptime"},
		{"empty output", &fakeAgent{status: []string{exited("")}}, 0, "empty"},
		{"oversized output", &fakeAgent{status: []string{exited(strings.Repeat("9", 400))}}, 0, "more than 256"},
		{"garbage reply", &fakeAgent{status: []string{`{"return":`}}, 0, "guest-exec-status reply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, at, err := guestUptime(ctx, tc.agent, "vm")
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.False(t, at.IsZero())
		})
	}
}

func TestGuestUptimeHonoursContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err := guestUptime(ctx, &fakeAgent{unavailable: 1 << 30}, "vm")
	require.ErrorIs(t, err, hypervisor.ErrAgentUnavailable)
}

func TestCheckClock(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		before, after, hostElapsed time.Duration
		want                       clockCheck
	}{
		{"kept time", 10 * time.Second, 20 * time.Second, 10 * time.Second, clockCheck{}},
		{"ahead of the host: nothing lost", 10 * time.Second, 21 * time.Second, 10 * time.Second, clockCheck{}},
		{"stood still for 6 s", 10 * time.Second, 14 * time.Second, 10 * time.Second, clockCheck{lost: 6 * time.Second}},
		{"rebooted", 20 * time.Second, 5 * time.Second, 10 * time.Second, clockCheck{rebooted: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, checkClock(tc.before, tc.after, tc.hostElapsed))
		})
	}
}
