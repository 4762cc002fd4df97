package guestagent_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/guestagent"
)

// slowLink sits between the client and the real agent and holds every
// chunk the agent sends for the current delay: a congested channel.
type slowLink struct {
	delay atomic.Int64
}

func (s *slowLink) start(t *testing.T, agentSock string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "qgap")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "link.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			agent, err := net.Dial("unix", agentSock)
			if err != nil {
				_ = client.Close()
				return
			}
			go func() { _, _ = io.Copy(agent, client); _ = agent.Close() }()
			go func() {
				defer func() { _ = client.Close() }()
				buf := make([]byte, 64<<10)
				for {
					n, err := agent.Read(buf)
					if err != nil {
						return
					}
					time.Sleep(time.Duration(s.delay.Load()))
					if _, err := client.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return sock
}

// TestRealAgentStaleReplyAfterTimeout: the real agent's reply to a call
// that timed out arrives during the next call, which must skip it.
func TestRealAgentStaleReplyAfterTimeout(t *testing.T) {
	var link slowLink
	sock := link.start(t, startRealAgent(t))
	tr := guestagent.DialUnix(sock, guestagent.Options{})
	t.Cleanup(func() { _ = tr.Close() })
	c := guestagent.New(tr, guestagent.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Ping(ctx))

	link.delay.Store(int64(300 * time.Millisecond))
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	_, err := c.Users(short)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// The users reply is still held by the link when the next call starts.
	link.delay.Store(0)
	host, err := c.HostName(ctx)
	require.NoError(t, err)
	want, err := os.Hostname()
	require.NoError(t, err)
	assert.Equal(t, want, host)
	tz, err := c.Timezone(ctx)
	require.NoError(t, err)
	_, offset := time.Now().Zone()
	assert.Equal(t, offset, tz.Offset)
}
