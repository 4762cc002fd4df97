package sim_test

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

const consoleXML = `<domain type='kvm'><name>ns_con</name><uuid>8e1c7a3e-1d7c-4c57-9d53-2f4f0f7a1b01</uuid>
<memory unit='MiB'>128</memory><vcpu>1</vcpu></domain>`

// readUntil reads from r until the text read so far contains want.
func readUntil(t *testing.T, r *bufio.Reader, want string) string {
	t.Helper()
	var sb strings.Builder
	for !strings.Contains(sb.String(), want) {
		b, err := r.ReadByte()
		require.NoError(t, err, "read so far: %q", sb.String())
		sb.WriteByte(b)
	}
	return sb.String()
}

func TestConsoleAnswersCommands(t *testing.T) {
	ctx := context.Background()
	h, _ := virtualHost(t, sim.Options{})
	_, err := h.Define(ctx, consoleXML)
	require.NoError(t, err)

	_, err = h.OpenConsole(ctx, "ns_con")
	require.ErrorIs(t, err, hypervisor.ErrInvalidState, "a stopped domain has no console")
	_, err = h.OpenConsole(ctx, "ns_missing")
	require.ErrorIs(t, err, hypervisor.ErrNotFound)

	require.NoError(t, h.Start(ctx, "ns_con", hypervisor.StartOptions{}))
	con, err := h.OpenConsole(ctx, "ns_con")
	require.NoError(t, err)
	defer con.Close()
	r := bufio.NewReader(con)
	boot := readUntil(t, r, "/ # ")
	assert.Contains(t, boot, "Linux version")
	assert.Contains(t, boot, "Memory: 131072K available")

	tests := []struct{ in, want string }{
		{"hostname\r", "con\r\n"},
		{"echo hello  world\n", "hello world\r\n"},
		{"uname -a\r\n", "Linux con 6.1.0-virtkit-sim"},
		{"reboot\r", "reboot: not supported by the simulated guest"},
	}
	for _, tc := range tests {
		t.Run(strings.TrimSpace(tc.in), func(t *testing.T) {
			go func() { _, _ = io.WriteString(con, tc.in) }()
			out := readUntil(t, r, "/ # ")
			assert.Contains(t, out, strings.TrimSpace(tc.in), "echoed")
			assert.Contains(t, out, tc.want)
		})
	}

	// The console ends with the domain.
	require.NoError(t, h.Destroy(ctx, "ns_con"))
	done := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, r); done <- err }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("console still open after the domain stopped")
	}
}
