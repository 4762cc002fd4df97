package main

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/node"
)

// simNoMigrationPeer is why a `virtkit node --hypervisor sim` process
// cannot take part in migrations.
const simNoMigrationPeer = "a simulated host in its own node process has no migration peer " +
	"(simulated hosts migrate only between hosts on one sim.Network in one process)"

// migrationFlags are the node's addresses for incoming live migrations.
type migrationFlags struct {
	uri     string
	dataURI string
}

func (m *migrationFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&m.uri, "migration-uri", "",
		"libvirt URI other nodes migrate to this host with, e.g. qemu+tcp://10.0.0.5/system (--hypervisor libvirt; without it the node cannot take part in migrations)")
	fs.StringVar(&m.dataURI, "migration-data-uri", "",
		"migration data connection, e.g. tcp://10.0.0.5:49152 (--hypervisor libvirt; default: libvirt chooses)")
}

// options returns the agent's migration options for the hypervisor kind,
// with Unsupported set when the node cannot take part in migrations.
func (m *migrationFlags) options(hypervisorKind string) (node.MigrationOptions, error) {
	if hypervisorKind != "libvirt" {
		if m.uri != "" || m.dataURI != "" {
			return node.MigrationOptions{}, errors.New("--migration-uri, --migration-data-uri: only with --hypervisor libvirt")
		}
		return node.MigrationOptions{Unsupported: simNoMigrationPeer}, nil
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
