package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/internal/tcpproxy"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// A node agent or controller process started while its etcd cannot be
// reached (a partition: its loopback proxy to etcd holds every byte) waits
// and retries, logging why, instead of exiting when its first attempt's
// deadline passes; once the link heals it starts: the node registers its
// Node, the controller leads.
func TestProcessesWaitForUnreachableStore(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	st, err := etcd.New(t.Context(), etcd.Options{Endpoints: endpoints})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	for _, tc := range []struct {
		name    string
		args    []string
		started func(out string) bool
	}{
		{"node", []string{"node", "--name", "n1", "--hypervisor", "sim", "--heartbeat-interval", "200ms"},
			func(string) bool { return st.Get(t.Context(), store.Key{Name: "n1"}, &virtkit.Node{}) == nil }},
		{"controller", []string{"controller", "--leader-id", "c1", "--leader-ttl", "5s"},
			func(out string) bool { return strings.Contains(out, "controllers running") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			px, err := tcpproxy.Start(t.Context(), tcpproxy.Options{Target: strings.TrimPrefix(endpoints[0], "http://")})
			require.NoError(t, err)
			t.Cleanup(func() { _ = px.Close() })
			px.Cut()

			cmd := newRootCmd()
			var out lockedBuffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(append(tc.args, "--store", "etcd://"+px.Addr()))
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- cmd.ExecuteContext(ctx) }()
			t.Cleanup(func() {
				cancel()
				select {
				case <-done:
				case <-time.After(20 * time.Second):
					t.Error("process did not stop")
				}
			})

			// Past the first attempt's deadline (etcd.DefaultDialTimeout)
			// the process is still there, waiting.
			deadline := time.After(3 * etcd.DefaultDialTimeout)
			for !strings.Contains(out.String(), "store not reachable: waiting for it before starting") {
				select {
				case err := <-done:
					done <- err
					t.Fatalf("exited while the store was unreachable: %v\n%s", err, &out)
				case <-deadline:
					t.Fatalf("no word of the wait:\n%s", &out)
				case <-time.After(50 * time.Millisecond):
				}
			}
			assert.False(t, tc.started(out.String()), "started with the store cut off")

			px.Heal()
			require.Eventually(t, func() bool {
				select {
				case err := <-done:
					done <- err
					t.Fatalf("exited: %v\n%s", err, &out)
				default:
				}
				return tc.started(out.String())
			}, 30*time.Second, 50*time.Millisecond, "started once the store answers:\n%s", &out)
			assert.Contains(t, out.String(), "store reachable")
		})
	}
}

// A process asked to stop while it waits for its store stops, whether the
// store's link holds every byte (a partition) or nothing listens yet (etcd
// not started: connections refused).
func TestWaitForStoreHonoursContext(t *testing.T) {
	px, err := tcpproxy.Start(t.Context(), tcpproxy.Options{Target: "127.0.0.1:9"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = px.Close() })
	px.Cut()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := l.Addr().String()
	require.NoError(t, l.Close())
	for name, addr := range map[string]string{"partitioned": px.Addr(), "not listening": refused} {
		t.Run(name, func(t *testing.T) {
			cmd := newRootCmd()
			var out lockedBuffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs([]string{"node", "--name", "n1", "--store", "etcd://" + addr})
			ctx, cancel := context.WithTimeout(t.Context(), 2*etcd.DefaultDialTimeout)
			defer cancel()
			start := time.Now()
			err := cmd.ExecuteContext(ctx)
			require.Error(t, err)
			assert.Less(t, time.Since(start), 4*etcd.DefaultDialTimeout, "stopped with its context")
			assert.Contains(t, out.String(), "store not reachable: waiting for it before starting", "it waited rather than exit")
		})
	}
}

func TestStoreUnreachable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("etcd [x]: %w", context.DeadlineExceeded), true},
		{fmt.Errorf("etcd [x]: %w", status.Error(codes.Unavailable, "connection refused")), true},
		{fmt.Errorf("etcd [x]: %w", status.Error(codes.InvalidArgument, "authentication failed")), false},
		{fmt.Errorf("--store: %w: bad", errBadStoreFlag), false},
		{fmt.Errorf("prefix: %w", store.ErrInvalid), false},
		{errors.New("open ca.pem: no such file"), false},
	} {
		assert.Equal(t, tc.want, storeUnreachable(tc.err), "%v", tc.err)
	}
}
