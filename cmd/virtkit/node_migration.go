package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
)

// defaultSimMigrationURI is where a `virtkit node --hypervisor sim`
// process listens for incoming migrations without --migration-uri: a free
// loopback port, enough for node processes on one machine.
const defaultSimMigrationURI = "tcp://127.0.0.1:0"

// migrationFlags are the node's addresses for incoming live migrations.
type migrationFlags struct {
	uri     string
	dataURI string
}

func (m *migrationFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&m.uri, "migration-uri", "",
		"address other nodes migrate to this host with: a libvirt URI such as qemu+tcp://10.0.0.5/system (--hypervisor libvirt; without it the node cannot take part in migrations), "+
			"or tcp://HOST:PORT for --hypervisor sim, where the node listens (port 0: a free one; default "+defaultSimMigrationURI+")")
	fs.StringVar(&m.dataURI, "migration-data-uri", "",
		"migration data connection, e.g. tcp://10.0.0.5:49152 (libvirt: default libvirt chooses; sim: the node listens here instead and publishes it as the data address)")
}

// options returns the agent's migration options for the hypervisor kind,
// with Unsupported set when the node cannot take part in migrations. For
// sim the URIs are the listener's; startSim fills in the real ones.
func (m *migrationFlags) options(hypervisorKind string) (node.MigrationOptions, error) {
	if hypervisorKind != "libvirt" {
		for _, f := range []struct{ name, v string }{{"--migration-uri", m.uri}, {"--migration-data-uri", m.dataURI}} {
			if f.v == "" {
				continue
			}
			if _, err := sim.ParseMigrationAddress(f.v); err != nil {
				return node.MigrationOptions{}, fmt.Errorf("%s %q: --hypervisor sim listens on tcp://HOST:PORT: %w", f.name, f.v, err)
			}
		}
		uri := m.uri
		if uri == "" {
			uri = defaultSimMigrationURI
		}
		return node.MigrationOptions{URI: uri, DataURI: m.dataURI}, nil
	}
	for _, f := range []struct{ name, v string }{{"--migration-uri", m.uri}, {"--migration-data-uri", m.dataURI}} {
		if f.v == "" {
			continue
		}
		if u, err := url.Parse(f.v); err != nil || u.Scheme == "" {
			return node.MigrationOptions{}, fmt.Errorf("%s %q: want a URI with a scheme", f.name, f.v)
		}
	}
	if m.uri == "" {
		if m.dataURI != "" {
			return node.MigrationOptions{}, errors.New("--migration-data-uri: needs --migration-uri")
		}
		return node.MigrationOptions{Unsupported: "started without --migration-uri: other nodes cannot reach this host's libvirtd"}, nil
	}
	return node.MigrationOptions{URI: m.uri, DataURI: m.dataURI}, nil
}

// startSim starts the simulated host's migration listener on the data
// URI (else the URI) of mo and returns mo with the addresses it really
// listens on. stop ends the listener and waits for it.
func startSimMigration(ctx context.Context, hv hypervisor.Hypervisor, mo node.MigrationOptions, log *slog.Logger) (node.MigrationOptions, func(), error) {
	var h *sim.Host
	switch v := hv.(type) {
	case *sim.Host:
		h = v
	case *sim.Persistent:
		h = v.Unwrap()
	default:
		return mo, nil, fmt.Errorf("migration listener: %T is not a simulated host", hv)
	}
	flag, listen := "--migration-uri", mo.URI
	if mo.DataURI != "" {
		flag, listen = "--migration-data-uri", mo.DataURI
	}
	l, err := sim.ListenMigration(ctx, h, listen, sim.ListenOptions{Logger: log})
	if err != nil {
		return mo, nil, fmt.Errorf("%s %s: %w", flag, listen, err)
	}
	if mo.DataURI != "" {
		mo.DataURI = l.URI()
	} else {
		mo.URI = l.URI()
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := l.Serve(sctx); err != nil {
			log.Error("migration listener stopped", "err", err)
		}
	}()
	log.Info("listening for incoming migrations", "address", l.URI())
	return mo, func() { cancel(); <-done }, nil
}
