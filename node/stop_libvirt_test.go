//go:build libvirt && cgo

package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/store"
)

// On libvirt's in-process test driver, whose guests power off as soon as
// virDomainShutdown asks, deleting a VMI with a 180 s grace period stops its
// guest through the shutdown request: the VMI ends Succeeded at once, long
// before the grace period would have the guest destroyed (Failed).
func TestDeleteShutsDownOnLibvirtTestDriver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := libvirt.New(ctx, libvirt.Options{URI: "test:///default"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	st := store.NewMemory()
	vmi := newScheduledVMI(t, st, "graceful")
	grace := int64(180)
	vmi.Spec.TerminationGracePeriodSeconds = &grace
	require.NoError(t, st.Update(ctx, vmi))
	runAgent(t, st, h, nil)
	vmi = eventuallyPhase(t, st, "graceful", virtkit.Running)

	events, err := st.Watch(ctx, &virtkit.VirtualMachineInstanceList{}, store.WatchOptions{})
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, vmi, store.DeleteOptions{}))
	var phases []virtkit.VirtualMachineInstancePhase
	for ev := range events {
		if ev.Type == store.Deleted {
			break
		}
		if p := ev.Object.(*virtkit.VirtualMachineInstance).Status.Phase; len(phases) == 0 || phases[len(phases)-1] != p {
			phases = append(phases, p)
		}
	}
	require.NoError(t, ctx.Err(), "the VMI was released within the test's 30 s")
	assert.Equal(t, []virtkit.VirtualMachineInstancePhase{virtkit.Running, virtkit.Succeeded}, phases)
	_, left := domainNames(t, h)["default_graceful"]
	assert.False(t, left, "the domain is undefined")
}
