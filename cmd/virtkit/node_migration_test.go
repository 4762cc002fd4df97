package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNodeMigrationFlags(t *testing.T) {
	for _, tc := range []struct {
		name            string
		hv              string
		flags           migrationFlags
		wantURI         string
		wantUnsupported string
		wantErr         string
	}{
		{name: "sim: a loopback listener by default", hv: "sim", wantURI: defaultSimMigrationURI},
		{name: "sim: a given listener", hv: "sim", flags: migrationFlags{uri: "tcp://10.0.0.5:7000"}, wantURI: "tcp://10.0.0.5:7000"},
		{name: "sim refuses a libvirt URI", hv: "sim", flags: migrationFlags{uri: "qemu+tcp://h/system"}, wantErr: `--migration-uri "qemu+tcp://h/system": --hypervisor sim listens on tcp://HOST:PORT`},
		{name: "sim refuses TLS", hv: "sim", flags: migrationFlags{dataURI: "tls://h:1"}, wantErr: "--migration-data-uri"},
		{name: "libvirt without a URI", hv: "libvirt", wantUnsupported: "started without --migration-uri"},
		{name: "libvirt with a URI", hv: "libvirt", flags: migrationFlags{uri: "qemu+tcp://10.0.0.5/system", dataURI: "tcp://10.0.0.5:49152"}, wantURI: "qemu+tcp://10.0.0.5/system"},
		{name: "libvirt URI without a scheme", hv: "libvirt", flags: migrationFlags{uri: "10.0.0.5"}, wantErr: "--migration-uri \"10.0.0.5\": want a URI with a scheme"},
		{name: "data URI alone", hv: "libvirt", flags: migrationFlags{dataURI: "tcp://h:1"}, wantErr: "needs --migration-uri"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := tc.flags.options(tc.hv)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantURI, o.URI)
			if tc.wantUnsupported == "" {
				assert.Empty(t, o.Unsupported)
			} else {
				assert.Contains(t, o.Unsupported, tc.wantUnsupported)
			}
		})
	}
}
