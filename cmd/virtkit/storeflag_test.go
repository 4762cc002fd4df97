package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStoreFlags(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
	for _, tc := range []struct {
		name      string
		flags     storeFlags
		endpoints []string
		tls       bool
		wantErr   string
	}{
		{name: "one endpoint", flags: storeFlags{store: "etcd://127.0.0.1:2379"}, endpoints: []string{"http://127.0.0.1:2379"}},
		{name: "several", flags: storeFlags{store: "etcd://a:1, b:2,"}, endpoints: []string{"http://a:1", "http://b:2"}},
		{name: "tls scheme", flags: storeFlags{store: "etcds://a:1"}, endpoints: []string{"https://a:1"}, tls: true},
		{name: "auth", flags: storeFlags{store: "etcd://a:1", user: "root", password: "pw"}, endpoints: []string{"http://a:1"}},
		{name: "memory is not etcd", flags: storeFlags{store: "memory"}, wantErr: "--store"},
		{name: "wrong scheme", flags: storeFlags{store: "http://a:1"}, wantErr: "--store"},
		{name: "no endpoint", flags: storeFlags{store: "etcd://"}, wantErr: "no etcd endpoint"},
		{name: "no port", flags: storeFlags{store: "etcd://a"}, wantErr: "not HOST:PORT"},
		{name: "a path", flags: storeFlags{store: "etcd://a:1/x"}, wantErr: "not HOST:PORT"},
		{name: "password without user", flags: storeFlags{store: "etcd://a:1", password: "pw"}, wantErr: "--etcd-password"},
		{name: "cert without key", flags: storeFlags{store: "etcd://a:1", cert: "c.pem"}, wantErr: "--etcd-cert/--etcd-key"},
		{name: "missing ca", flags: storeFlags{store: "etcd://a:1", cacert: filepath.Join(dir, "none.pem")}, wantErr: "--etcd-cacert"},
		{name: "ca not pem", flags: storeFlags{store: "etcd://a:1", cacert: notPEM}, wantErr: "no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := tc.flags.etcdOptions()
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.endpoints, opts.Endpoints)
			assert.Equal(t, tc.tls, opts.TLS != nil)
			assert.Equal(t, tc.flags.user, opts.Username)
			assert.Equal(t, tc.flags.password, opts.Password)
		})
	}
}

func TestSharedCommandsRefuseTheMemoryStore(t *testing.T) {
	f := storeFlags{store: "memory"}
	_, err := f.openShared(t.Context(), nil)
	require.ErrorIs(t, err, errBadStoreFlag)
}
