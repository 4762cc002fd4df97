package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStoreFlags(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	pwFile := file("pw", "s3cret pw\n")
	crlfFile := file("crlf", "pw\r\n")
	emptyFile := file("empty", "\n")
	twoLines := file("two", "a\nb\n")
	hugeFile := file("huge", strings.Repeat("p", maxPasswordFile+1))
	for _, tc := range []struct {
		name      string
		flags     storeFlags
		endpoints []string
		tls       bool
		password  string
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
		{name: "password file", flags: storeFlags{store: "etcd://a:1", user: "root", passwordFile: pwFile}, endpoints: []string{"http://a:1"}, password: "s3cret pw"},
		{name: "password file with CRLF", flags: storeFlags{store: "etcd://a:1", user: "root", passwordFile: crlfFile}, endpoints: []string{"http://a:1"}, password: "pw"},
		{name: "password file and flag", flags: storeFlags{store: "etcd://a:1", user: "root", passwordFile: pwFile, password: "x"}, wantErr: "give one"},
		{name: "password file missing", flags: storeFlags{store: "etcd://a:1", user: "root", passwordFile: filepath.Join(dir, "none")}, wantErr: "--etcd-password-file"},
		{name: "password file empty", flags: storeFlags{store: "etcd://a:1", user: "root", passwordFile: emptyFile}, wantErr: "is empty"},
		{name: "password file two lines", flags: storeFlags{store: "etcd://a:1", user: "root", passwordFile: twoLines}, wantErr: "more than one line"},
		{name: "password file too large", flags: storeFlags{store: "etcd://a:1", user: "root", passwordFile: hugeFile}, wantErr: "larger than"},
		{name: "password file without user", flags: storeFlags{store: "etcd://a:1", passwordFile: pwFile}, wantErr: "needs --etcd-user"},
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
			want := tc.password
			if want == "" {
				want = tc.flags.password
			}
			assert.Equal(t, want, opts.Password)
		})
	}
}

func TestSharedCommandsRefuseTheMemoryStore(t *testing.T) {
	f := storeFlags{store: "memory"}
	_, err := f.openShared(t.Context(), nil)
	require.ErrorIs(t, err, errBadStoreFlag)
}

func TestEtcdPasswordSources(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(pwFile, []byte("from-file\n"), 0o600))
	t.Setenv(etcdPasswordEnv, "from-env")
	for _, tc := range []struct {
		name  string
		flags storeFlags
		want  string
	}{
		{"environment", storeFlags{user: "root"}, "from-env"},
		{"environment needs a user", storeFlags{}, ""},
		{"file over environment", storeFlags{user: "root", passwordFile: pwFile}, "from-file"},
		{"flag over environment", storeFlags{user: "root", password: "from-flag"}, "from-flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.flags.store = "etcd://a:1"
			opts, err := tc.flags.etcdOptions()
			require.NoError(t, err)
			assert.Equal(t, tc.want, opts.Password)
		})
	}
}

func TestEtcdPasswordWarnings(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(open, []byte("pw\n"), 0o644))
	require.NoError(t, os.Chmod(open, 0o644)) // whatever the umask

	var f storeFlags
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	f.register(cmd)
	var stderr bytes.Buffer
	cmd.SetErr(&stderr)
	cmd.SetOut(&stderr)
	cmd.SetArgs([]string{"--store", "etcd://a:1", "--etcd-user", "root", "--etcd-password", "pw"})
	require.NoError(t, cmd.Execute())
	assert.Contains(t, stderr.String(), "--etcd-password has been deprecated", "a password in argv is warned about")
	assert.NotContains(t, stderr.String(), "pw\n")
	opts, err := f.etcdOptions()
	require.NoError(t, err)
	assert.Equal(t, "pw", opts.Password, "the flag still works")

	var help bytes.Buffer
	cmd.SetOut(&help)
	require.NoError(t, cmd.Help())
	assert.Contains(t, help.String(), "--etcd-password-file")
	assert.NotContains(t, help.String(), "--etcd-password ", "the unsafe flag is not advertised")

	stderr.Reset()
	f = storeFlags{store: "etcd://a:1", user: "root", passwordFile: open, stderr: func() io.Writer { return &stderr }}
	_, err = f.etcdOptions()
	require.NoError(t, err)
	assert.Contains(t, stderr.String(), "accessible by group or others")
}
