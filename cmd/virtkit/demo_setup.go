package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// demoClusterOptions sets the cluster up for the chosen hypervisor. The
// returned cleanup closes what it opened.
func demoClusterOptions(ctx context.Context, o demoOptions, logger *slog.Logger) (cluster.Options, func(), error) {
	copts := cluster.Options{
		Nodes:  o.nodes,
		Logger: logger,
		// The demo is watched by a person: refresh status quickly.
		NodeAgent: node.Options{StatusInterval: time.Second, HeartbeatInterval: 2 * time.Second},
		// KubeVirt retries a silent agent after 10 s; a person watching
		// a guest boot should not wait that long.
		GuestAgent: node.GuestAgentSourceOptions{Poller: guestagent.PollerOptions{InitialInterval: time.Second}},
		// The demo is one person's sandbox: its disk server (and the
		// servers a user's manifests name) are on loopback, which a
		// node refuses to tenants by default.
		Storage: cluster.StorageOptions{AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}},
	}
	switch o.hypervisor {
	case "sim":
		copts.NewHypervisor = simHostsOnOneNetwork(sim.Link{Bandwidth: 1250 * 1000 * 1000})
		return copts, func() {}, nil
	case "libvirt":
		return libvirtDemoOptions(ctx, o, copts)
	}
	return copts, nil, fmt.Errorf("--hypervisor: want sim or libvirt, got %q", o.hypervisor)
}

func isConflict(err error) bool { return errors.Is(err, store.ErrConflict) }
func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// simHostsOnOneNetwork returns a hypervisor factory for simulated hosts in
// real time, every pair joined by link so VMIs can migrate between them.
func simHostsOnOneNetwork(link sim.Link) func(string) (hypervisor.Hypervisor, error) {
	net := sim.NewNetwork()
	var hosts []*sim.Host
	return func(name string) (hypervisor.Hypervisor, error) {
		h := sim.New(sim.Options{Name: name})
		for _, other := range hosts {
			if err := net.Connect(h, other, link); err != nil {
				return nil, err
			}
		}
		hosts = append(hosts, h)
		return h, nil
	}
}
