package etcdproc_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/internal/etcdproc"
	"github.com/virtkit/virtkit/internal/testenv"
)

func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an etcd server process; skipped with -short")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	bin, err := etcdproc.FindBinary(root)
	if err != nil {
		testenv.Unavailable(t, err.Error())
	}
	return bin
}

func TestKillRestartKeepsData(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	s, err := etcdproc.Start(t.Context(), etcdproc.Options{Binary: bin, Dir: filepath.Join(dir, "data"), LogFile: filepath.Join(dir, "etcd.log")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Kill(context.Background()) })
	require.True(t, s.Running())

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint()}, DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err = cli.Put(ctx, "/k", "v1")
	require.NoError(t, err)

	pid := s.PID()
	require.NoError(t, s.Kill(ctx))
	assert.False(t, s.Running())
	assert.Zero(t, s.PID())
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = cli.Get(short, "/k")
	cancelShort()
	require.Error(t, err, "a killed server answers nothing")

	addr := s.ClientAddr()
	require.NoError(t, s.Restart(ctx))
	assert.Equal(t, addr, s.ClientAddr(), "same endpoint after a restart")
	assert.NotEqual(t, pid, s.PID())
	require.ErrorIs(t, s.Restart(ctx), etcdproc.ErrRunning)
	// The same client reconnects and reads what was written before the kill.
	resp, err := cli.Get(ctx, "/k")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	assert.Equal(t, "v1", string(resp.Kvs[0].Value))

	require.NoError(t, s.Stop(ctx))
	assert.False(t, s.Running())
	logText, err := os.ReadFile(filepath.Join(dir, "etcd.log"))
	require.NoError(t, err)
	assert.NotEmpty(t, logText)
}

func TestVersion(t *testing.T) {
	v, err := etcdproc.Version(t.Context(), binary(t))
	require.NoError(t, err)
	assert.Contains(t, v, "etcd Version:")
}

func TestStartFailsWhenServerCannotRun(t *testing.T) {
	bin := binary(t)
	// A data directory that is a file: etcd refuses it and exits.
	file := filepath.Join(t.TempDir(), "not-a-dir")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err := etcdproc.Start(t.Context(), etcdproc.Options{Binary: bin, Dir: file, ReadyTimeout: 30 * time.Second})
	require.ErrorIs(t, err, etcdproc.ErrNotReady)
}

func TestInvalidOptions(t *testing.T) {
	tests := []struct {
		name string
		opts etcdproc.Options
	}{
		{"no binary", etcdproc.Options{Dir: "/tmp/x"}},
		{"no dir", etcdproc.Options{Binary: "/bin/true"}},
		{"negative timeout", etcdproc.Options{Binary: "/bin/true", Dir: "/tmp/x", ReadyTimeout: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := etcdproc.Start(t.Context(), tt.opts)
			require.ErrorIs(t, err, virtkit.ErrInvalidOptions)
		})
	}
}

func TestFindBinary(t *testing.T) {
	t.Setenv(etcdproc.BinaryEnv, filepath.Join(t.TempDir(), "missing"))
	_, err := etcdproc.FindBinary("")
	require.ErrorIs(t, err, etcdproc.ErrNotFound)

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "build", "bin"), 0o755))
	want := filepath.Join(dir, "build", "bin", "etcd")
	require.NoError(t, os.WriteFile(want, []byte("#!/bin/sh\n"), 0o755))
	t.Setenv(etcdproc.BinaryEnv, "")
	got, err := etcdproc.FindBinary(dir)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}
