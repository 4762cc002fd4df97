package cluster_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// backupHost is a simulated host that also offers a point-in-time disk
// copy, as libvirt does: it records each call and, before copying, checks
// that the guest is frozen (a simulated guest refuses disk writes then).
type backupHost struct {
	*backupSim
	mu    sync.Mutex
	calls []backupCall
}

// backupSim names the embedded host (its Host method would clash with a
// field named Host).
type backupSim = sim.Host

type backupCall struct {
	domain, source, target string
	frozen                 bool
}

var _ hypervisor.DiskBackuper = (*backupHost)(nil)

func (b *backupHost) BackupDisk(ctx context.Context, domain, source, target string) error {
	if _, err := b.Info(ctx, domain); err != nil {
		return err
	}
	werr := b.WriteDisk(ctx, domain, "vda", 0, []byte("xx"))
	b.mu.Lock()
	b.calls = append(b.calls, backupCall{domain: domain, source: source, target: target,
		frozen: errors.Is(werr, hypervisor.ErrInvalidState) && strings.Contains(werr.Error(), "frozen")})
	b.mu.Unlock()
	in, err := os.Open(source)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func (b *backupHost) recorded() []backupCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]backupCall(nil), b.calls...)
}

// The cluster copies the disk of a running VM through the hypervisor of
// the node running it, by the domain's name and the volume's file, while
// the guest is frozen; the copy is the snapshot a restore brings back. A
// stopped VM's disk is copied as a file, without the hypervisor.
func TestSnapshotInUseThroughHypervisor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var (
		mu    sync.Mutex
		hosts = map[string]*backupHost{}
	)
	e := newSnapEnv(t, ctx, cluster.Options{NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
		h := &backupHost{backupSim: sim.New(sim.Options{Name: name})}
		mu.Lock()
		hosts[name] = h
		mu.Unlock()
		return h, nil
	}})
	e.applyVM(ctx, "web", "Always")
	vmi, err := e.c.WaitForVMI(ctx, "default", "web", cluster.HasCondition[*virtkit.VirtualMachineInstance](virtkit.VirtualMachineInstanceAgentConnected, virtkit.ConditionTrue))
	require.NoError(t, err)
	host := hosts[vmi.Status.NodeName]
	require.NotNil(t, host)
	require.NoError(t, host.WriteDisk(ctx, "default_web", "vda", 0, []byte("v1")))

	snap := e.snapshot(ctx, "web-snap", "web")
	assert.Equal(t, []virtkit.Indication{virtkit.SnapshotIndicationOnline, virtkit.SnapshotIndicationGuestAgent}, snap.Status.Indications)
	calls := host.recorded()
	require.Len(t, calls, 1, "the running VM's disk is copied by its node's hypervisor")
	disk := e.disk(ctx, "web-root")
	assert.Equal(t, "default_web", calls[0].domain)
	assert.Equal(t, disk, calls[0].source)
	assert.Equal(t, filepath.Dir(disk), filepath.Dir(calls[0].target), "the copy is made beside the volume")
	assert.True(t, strings.HasPrefix(filepath.Base(calls[0].target), "."), calls[0].target)
	assert.True(t, calls[0].frozen, "the guest is frozen while its disk is copied")
	assert.NoFileExists(t, calls[0].target, "the copy was moved into the snapshot's place")

	require.NoError(t, host.WriteDisk(ctx, "default_web", "vda", 0, []byte("v2")))
	e.restore(ctx, "web-restore", "web-snap", "web-copy")
	copyVM := e.vm(ctx, "web-copy")
	assert.Equal(t, "v1", e.readMarker(ctx, copyVM.Spec.Template.Spec.Volumes[0].DataVolume.Name))

	// A stopped VM: its disk file is copied, the hypervisor not asked.
	e.applyVM(ctx, "db", "Halted")
	e.writeOffline(ctx, "db-root", "d1")
	e.snapshot(ctx, "db-snap", "db")
	assert.Len(t, host.recorded(), 1)
	for _, h := range hosts {
		if h != host {
			assert.Empty(t, h.recorded())
		}
	}
}
