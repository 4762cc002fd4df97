package simulation

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/virtkit/virtkit/internal/leader"
	"github.com/virtkit/virtkit/internal/tcpproxy"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// mpStall is a stall of the controller's link to etcd (renewals sent, no
// answer) of the length a loaded machine's stalls reach: the multi-process
// controller's lease must outlive it, which the 2 s lease it had could not
// (etcd's client gives a lease up once no renewal has been answered for
// its TTL).
const mpStall = 2500 * time.Millisecond

// The tester's controller keeps its lease through a stall a loaded machine
// causes, where a 2 s lease is lost by a live leader.
func TestMultiProcessLeaderLeaseOutlivesStall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded etcd: not in -short")
	}
	tester, err := time.ParseDuration(mpLeaderTTL)
	require.NoError(t, err)
	endpoints := etcdtest.StartServer(t)
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		lost bool
	}{
		{"2s lease", 2 * time.Second, true},
		{"the tester's lease", tester, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			px, err := tcpproxy.Start(t.Context(), tcpproxy.Options{Target: strings.TrimPrefix(endpoints[0], "http://")})
			require.NoError(t, err)
			t.Cleanup(func() { _ = px.Close() })
			c, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + px.Addr()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			leading := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				done <- leader.Run(ctx, leader.Options{Client: c, Key: "/test/" + strings.ReplaceAll(tc.name, " ", "-"),
					Identity: "c1", TTL: tc.ttl}, func(ctx context.Context) error {
					close(leading)
					<-ctx.Done()
					return nil
				})
			}()
			select {
			case <-leading:
			case err := <-done:
				t.Fatalf("did not lead: %v", err)
			case <-time.After(30 * time.Second):
				t.Fatal("did not lead")
			}
			px.Cut()
			time.Sleep(mpStall)
			px.Heal()
			// Two more TTLs: a lease given up during the stall ends the
			// session by then.
			select {
			case err := <-done:
				require.True(t, tc.lost, "a live leader lost its %v lease to a %v stall: %v", tc.ttl, mpStall, err)
				require.True(t, errors.Is(err, leader.ErrLeadershipLost), "%v", err)
			case <-time.After(2 * tc.ttl):
				require.False(t, tc.lost, "a %v lease outlived a %v stall", tc.ttl, mpStall)
			}
		})
	}
}
