package sim_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

func persistXML(name string) string {
	return fmt.Sprintf(`<domain type='kvm'><name>%s</name><memory unit='MiB'>64</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os></domain>`, name)
}

func states(t *testing.T, h hypervisor.Hypervisor) map[string]hypervisor.DomainState {
	t.Helper()
	list, err := h.List(context.Background())
	require.NoError(t, err)
	out := map[string]hypervisor.DomainState{}
	for _, d := range list {
		out[d.Name] = d.State
	}
	return out
}

func TestPersistentHostSurvivesItsProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "host.json")
	ctx, cancel := context.WithCancel(context.Background())
	p, err := sim.OpenPersistent(ctx, sim.New(sim.Options{Name: "n1"}), path)
	require.NoError(t, err)

	for _, name := range []string{"ns_running", "ns_paused", "ns_stopped", "ns_gone"} {
		_, err := p.Define(ctx, persistXML(name))
		require.NoError(t, err)
	}
	require.NoError(t, p.Start(ctx, "ns_running", hypervisor.StartOptions{}))
	require.NoError(t, p.Start(ctx, "ns_paused", hypervisor.StartOptions{Paused: true}))
	require.NoError(t, p.Start(ctx, "ns_gone", hypervisor.StartOptions{}))
	require.NoError(t, p.Destroy(ctx, "ns_gone"))
	require.NoError(t, p.Undefine(ctx, "ns_gone"))
	require.NoError(t, p.Err())

	saved, err := sim.ReadState(path)
	require.NoError(t, err)
	got := map[string]hypervisor.DomainState{}
	for _, d := range saved {
		got[d.Name] = d.State
		assert.True(t, d.Persistent)
		assert.NotEmpty(t, d.UUID)
	}
	want := map[string]hypervisor.DomainState{
		"ns_running": hypervisor.StateRunning, "ns_paused": hypervisor.StatePaused, "ns_stopped": hypervisor.StateShutoff,
	}
	assert.Equal(t, want, got)
	before := states(t, p)
	cancel() // the "process" ends; its guests keep running
	<-p.Done()

	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	fresh := sim.New(sim.Options{Name: "n1"})
	p2, err := sim.OpenPersistent(ctx2, fresh, path)
	require.NoError(t, err)
	t.Cleanup(func() { cancel2(); <-p2.Done() }) // before the temporary directory goes
	assert.Equal(t, before, states(t, p2))
	assert.Equal(t, want, states(t, fresh))

	// A change the guest makes on its own is saved too.
	require.NoError(t, p2.Shutdown(ctx2, "ns_running"))
	require.Eventually(t, func() bool {
		saved, err := sim.ReadState(path)
		require.NoError(t, err)
		for _, d := range saved {
			if d.Name == "ns_running" {
				return d.State == hypervisor.StateShutoff
			}
		}
		return false
	}, 10e9, 10e6)
}

func TestReadStateErrors(t *testing.T) {
	dir := t.TempDir()
	missing, err := sim.ReadState(filepath.Join(dir, "none.json"))
	require.NoError(t, err)
	assert.Empty(t, missing)

	for _, tc := range []struct{ name, content string }{
		{"garbage", "{not json"},
		{"other version", `{"version": 99, "domains": []}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".json")
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o600))
			_, err := sim.ReadState(path)
			require.ErrorIs(t, err, sim.ErrStateFile)
			_, err = sim.OpenPersistent(context.Background(), sim.New(sim.Options{}), path)
			require.ErrorIs(t, err, sim.ErrStateFile)
		})
	}
	_, err = sim.OpenPersistent(context.Background(), sim.New(sim.Options{}), "")
	require.ErrorIs(t, err, sim.ErrStateFile)
}
