package leader_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/internal/leader"
	"github.com/virtkit/virtkit/internal/tcpproxy"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

const key = "/test/leader"

func newClient(t *testing.T, endpoints []string) *clientv3.Client {
	t.Helper()
	// A quiet client: a cut-off candidate's abandoned resign logs every
	// retry until the client closes.
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// candidate runs one replica whose work reports leading on a channel and
// blocks until its context ends.
type candidate struct {
	leading  chan struct{}
	stopped  chan struct{}
	result   chan error
	cancel   context.CancelFunc
	isLeader atomic.Bool
}

func runCandidate(t *testing.T, c *clientv3.Client, id string) *candidate {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cd := &candidate{leading: make(chan struct{}), stopped: make(chan struct{}), result: make(chan error, 1), cancel: cancel}
	go func() {
		cd.result <- leader.Run(ctx, leader.Options{Client: c, Key: key, Identity: id, TTL: 2 * time.Second},
			func(ctx context.Context) error {
				cd.isLeader.Store(true)
				close(cd.leading)
				<-ctx.Done()
				cd.isLeader.Store(false)
				close(cd.stopped)
				return nil
			})
	}()
	t.Cleanup(cancel)
	return cd
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestOneLeaderAndHandOver(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	a := runCandidate(t, newClient(t, endpoints), "a")
	waitClosed(t, a.leading, "a to lead")
	b := runCandidate(t, newClient(t, endpoints), "b")
	// b must not lead while a does.
	select {
	case <-b.leading:
		t.Fatal("b leads while a leads")
	case <-time.After(500 * time.Millisecond):
	}
	a.cancel() // clean stop: a resigns, b takes over without waiting for the TTL
	require.NoError(t, <-a.result)
	waitClosed(t, b.leading, "b to lead")
	assert.False(t, a.isLeader.Load())
}

func TestLostSessionStopsWork(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	c := newClient(t, endpoints)
	a := runCandidate(t, newClient(t, endpoints), "a")
	waitClosed(t, a.leading, "a to lead")
	b := runCandidate(t, newClient(t, endpoints), "b")

	// Revoke a's lease behind its back, as if it had been partitioned away
	// longer than the TTL.
	resp, err := c.Get(t.Context(), key, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	require.NoError(t, err)
	require.NotEmpty(t, resp.Kvs)
	require.Equal(t, "a", string(resp.Kvs[0].Value))
	_, err = c.Revoke(t.Context(), clientv3.LeaseID(resp.Kvs[0].Lease))
	require.NoError(t, err)

	waitClosed(t, a.stopped, "a's work to stop")
	select {
	case err := <-a.result:
		require.True(t, errors.Is(err, leader.ErrLeadershipLost), "got %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after the session was lost")
	}
	waitClosed(t, b.leading, "b to lead")
}

// A candidate cut off from etcd stops promptly when asked to: it does not
// wait for etcd to come back (a controller process must exit on SIGTERM).
func TestCandidateCutOffStopsPromptly(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	a := runCandidate(t, newClient(t, endpoints), "a")
	waitClosed(t, a.leading, "a to lead")
	px, err := tcpproxy.Start(t.Context(), tcpproxy.Options{Target: strings.TrimPrefix(endpoints[0], "http://")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = px.Close() })
	b := runCandidate(t, newClient(t, []string{"http://" + px.Addr()}), "b")
	// b campaigns behind a; then its link to etcd is cut.
	time.Sleep(500 * time.Millisecond)
	px.Cut()
	began := time.Now()
	b.cancel()
	select {
	case err := <-b.result:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a candidate cut off from etcd did not stop within 10s of its cancellation")
	}
	t.Logf("stopped %v after its cancellation", time.Since(began).Round(time.Millisecond))
	assert.False(t, b.isLeader.Load())
	px.Heal()
}

func TestWithoutClientAlwaysLeads(t *testing.T) {
	ran := false
	var seen string
	err := leader.Run(t.Context(), leader.Options{Identity: "solo", OnLeader: func(id string) { seen = id }},
		func(context.Context) error { ran = true; return nil })
	require.NoError(t, err)
	assert.True(t, ran)
	assert.Equal(t, "solo", seen)
}

func TestInvalidOptions(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	c := newClient(t, endpoints)
	for _, tc := range []struct {
		name string
		opts leader.Options
	}{
		{"no key", leader.Options{Client: c, Identity: "x"}},
		{"no identity", leader.Options{Client: c, Key: key}},
		{"negative ttl", leader.Options{Client: c, Key: key, Identity: "x", TTL: -time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := leader.Run(t.Context(), tc.opts, func(context.Context) error { return nil })
			require.ErrorIs(t, err, virtkit.ErrInvalidOptions)
		})
	}
}
