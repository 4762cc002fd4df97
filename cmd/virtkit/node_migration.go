package main

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/spf13/cobra"

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
// sim the URIs are where the node process listens (cluster.NewNodeProcess
// publishes the addresses it really listens on).
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
