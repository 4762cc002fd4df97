package main

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

func TestNodeQemuImgSandboxFlags(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		want      importer.Sandbox
		wantErr   string
		wantWarns bool
	}{
		{name: "default", want: importer.SandboxBwrap},
		{name: "bwrap", args: []string{"--qemu-img-sandbox", "bwrap"}, want: importer.SandboxBwrap},
		{name: "none refused alone", args: []string{"--qemu-img-sandbox", "none"}, wantErr: "--allow-unconfined-qemu-img"},
		{name: "none allowed", args: []string{"--qemu-img-sandbox", "none", "--allow-unconfined-qemu-img"}, want: importer.SandboxNone, wantWarns: true},
		{name: "allow alone keeps bwrap", args: []string{"--allow-unconfined-qemu-img"}, want: importer.SandboxBwrap},
		{name: "auto is not offered", args: []string{"--qemu-img-sandbox", ""}, wantErr: `--qemu-img-sandbox: "" is not bwrap or none`},
		{name: "unknown", args: []string{"--qemu-img-sandbox", "firejail"}, wantErr: `"firejail" is not bwrap or none`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := &cobra.Command{Use: "node"}
			s := &nodeStorageFlags{}
			s.register(cmd)
			require.NoError(t, cmd.Flags().Parse(tt.args))
			var logs bytes.Buffer
			qi, err := s.qemuImg(slog.New(slog.NewTextHandler(&logs, nil)))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, qi.Sandbox)
			if tt.wantWarns {
				assert.Contains(t, logs.String(), "level=WARN")
				assert.Contains(t, logs.String(), "unconfined")
			} else {
				assert.Empty(t, logs.String())
			}
		})
	}
}

// Without bwrap the node refuses to set up its imports by default, naming
// the flag and the way out; with none allowed it runs them unconfined.
func TestNodeStorageWithoutBwrap(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	s := &nodeStorageFlags{dir: t.TempDir(), qemuImgSandbox: string(importer.SandboxBwrap)}
	log := slog.New(slog.DiscardHandler)
	build := func() error {
		o, err := s.options(log)
		require.NoError(t, err)
		p, err := cluster.NewNodeProcess(t.Context(), cluster.NodeProcessOptions{Storage: o,
			Node: cluster.NodeOptions{Agent: node.Options{NodeName: "n1", Store: store.NewMemory()}}})
		if err == nil {
			p.Close()
		}
		return s.explain(err)
	}
	err := build()
	require.ErrorIs(t, err, importer.ErrNoSandbox)
	assert.ErrorContains(t, err, "--qemu-img-sandbox bwrap")
	assert.ErrorContains(t, err, "install bubblewrap")

	s.qemuImgSandbox, s.allowUnconfined = string(importer.SandboxNone), true
	require.NoError(t, build())
}
