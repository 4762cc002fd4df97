// Package etcdtest starts a real, embedded, single-member etcd server for
// tests (go.etcd.io/etcd/server/v3/embed): no daemon, no root, a temporary
// data directory and free loopback ports.
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startTimeout bounds how long the server may take to become ready; it is a
// hang guard (a ready server takes well under a second).
const startTimeout = 60 * time.Second

// StartServer starts an etcd server that stops when t's cleanups run and
// returns its client endpoints. Register clients' cleanups after calling
// StartServer so they close first (cleanups run last-in first-out);
// a client still open when the server closes delays the close by seconds.
func StartServer(t testing.TB) []string {
	t.Helper()
	var lastErr error
	// A free port can be taken by someone else between probing and
	// binding; try again with new ports.
	for range 3 {
		endpoints, err := start(t)
		if err == nil {
			return endpoints
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("etcdtest: starting embedded etcd: %v", lastErr)
	return nil
}

func start(t testing.TB) ([]string, error) {
	clientURL, err := freeURL()
	if err != nil {
		return nil, err
	}
	peerURL, err := freeURL()
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "etcdtest"
	cfg.Dir = t.TempDir()
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = true // test data is disposable; fsync only slows tests
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd failed before ready: %w", err)
	case <-time.After(startTimeout):
		e.Server.Stop()
		e.Close()
		return nil, fmt.Errorf("etcd not ready after %v", startTimeout)
	}
	t.Cleanup(e.Close)
	return []string{clientURL.String()}, nil
}

// freeURL returns an http URL on a loopback port that was free just now.
func freeURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, err
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return url.URL{}, err
	}
	return url.URL{Scheme: "http", Host: addr}, nil
}
