package node_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// lossyVolumeStatus is a node agent's store whose status writes recording
// a hot-plugged volume fail while lose is set: the store became
// unreachable just after the agent hot-plugged a disk.
type lossyVolumeStatus struct {
	store.Store
	lose *atomic.Bool
}

var errLostWrite = errors.New("test: the store is unreachable")

func (s lossyVolumeStatus) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	if v, ok := obj.(*virtkit.VirtualMachineInstance); ok && s.lose.Load() {
		for _, vs := range v.Status.VolumeStatus {
			if vs.HotplugVolume != nil {
				return errLostWrite
			}
		}
	}
	return s.Store.UpdateStatus(ctx, obj)
}

// hasDisk reports whether the domain of VMI default/name on h holds a disk
// with the user alias of volume vol.
func hasDisk(h *sim.Host, name, vol string) bool {
	x, err := h.XML(context.Background(), node.DomainName("default", name))
	if err != nil {
		return false
	}
	dom := &libvirtxml.Domain{}
	if dom.Unmarshal(x) != nil || dom.Devices == nil {
		return false
	}
	for _, d := range dom.Devices.Disks {
		if d.Alias != nil && d.Alias.Name == "ua-"+vol {
			return true
		}
	}
	return false
}

// A disk the agent hot-plugged but whose status write was lost (the store
// unreachable, or the agent restarted before it could write) is not in
// the VMI's status; when its volume then leaves the spec, the agent still
// detaches it, as virt-handler compares the domain's disks with the spec on
// every sync. Before, only a spec or status naming a hot-plugged volume
// made the agent look at the domain's disks, so the disk stayed for good.
func TestHotUnplugOfDiskTheStatusLost(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart bool
	}{
		{name: "store unreachable"},
		{name: "agent restarted", restart: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lose atomic.Bool
			c := startMigClusterHosts(t, []string{"node-1"}, func(name string) sim.Options { return sim.Options{Name: name} },
				sim.Link{}, controller.MigrationOptions{}, nil, func(_ string, o *node.Options) {
					o.Store = lossyVolumeStatus{Store: o.Store, lose: &lose}
				})
			vmi := c.runningVMI(t, migratableVMI("lost", "128Mi"))
			h := c.hosts[vmi.Status.NodeName]

			lose.Store(true)
			require.NoError(t, c.Apply(c.ctx, withHotplugVolume(vmi, "data", "data-claim", virtkit.DiskBusSCSI)))
			require.Eventually(t, func() bool { return hasDisk(h, "lost", "data") }, 20*time.Second, 20*time.Millisecond,
				"the agent hot-plugs the disk")
			if tc.restart {
				require.NoError(t, c.CrashAgent(c.ctx, vmi.Status.NodeName))
			}
			cur := &virtkit.VirtualMachineInstance{}
			require.NoError(t, c.Store().Get(c.ctx, store.KeyOf(vmi), cur))
			_, recorded := volumeStatus(cur, "data")
			require.False(t, recorded, "the status write recording the disk is lost")

			cur.Spec.Volumes = vmi.Spec.Volumes
			cur.Spec.Domain.Devices.Disks = vmi.Spec.Domain.Devices.Disks
			require.NoError(t, c.Store().Update(c.ctx, cur))
			lose.Store(false)
			if tc.restart {
				require.NoError(t, c.RestartAgent(c.ctx, vmi.Status.NodeName))
			}
			assert.Eventually(t, func() bool { return !hasDisk(h, "lost", "data") }, 20*time.Second, 20*time.Millisecond,
				"the disk whose volume left the spec is detached")
			got := &virtkit.VirtualMachineInstance{}
			require.NoError(t, c.Store().Get(c.ctx, store.KeyOf(vmi), got))
			_, listed := volumeStatus(got, "data")
			assert.False(t, listed)
			assert.Equal(t, vmi.UID, got.UID)
		})
	}
}
