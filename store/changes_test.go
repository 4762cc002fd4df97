package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

func phaseOf(o virtkit.Object) string {
	if o == nil {
		return "-"
	}
	return string(o.(*virtkit.VirtualMachineInstance).Status.Phase)
}

func setPhase(t *testing.T, s store.Store, vmi *virtkit.VirtualMachineInstance, p virtkit.VirtualMachineInstancePhase) {
	t.Helper()
	vmi.Status.Phase = p
	require.NoError(t, s.UpdateStatus(context.Background(), vmi))
}

func TestWatchChangesHandsOldAndNewInOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := store.NewMemory()
	existing := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "old"}}
	require.NoError(t, s.Create(ctx, existing))

	got := make(chan store.Change, 100)
	done := make(chan error, 1)
	go func() {
		done <- store.WatchChanges(ctx, s, &virtkit.VirtualMachineInstanceList{}, store.ChangeOptions{}, func(c store.Change) error {
			got <- c
			if c.Type == store.Deleted && c.Old.GetName() == "v" {
				return store.StopWatching()
			}
			return nil
		})
	}()
	first := <-got
	assert.Equal(t, store.Added, first.Type)
	assert.Nil(t, first.Old)
	assert.Equal(t, "old", first.New.GetName())

	// Writes faster than any reconciler re-reads: every one is a change.
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "v"}}
	require.NoError(t, s.Create(ctx, vmi))
	for _, p := range []virtkit.VirtualMachineInstancePhase{virtkit.Pending, virtkit.Scheduling, virtkit.Scheduled, virtkit.Running, virtkit.Succeeded} {
		setPhase(t, s, vmi, p)
	}
	require.NoError(t, s.Delete(ctx, vmi, store.DeleteOptions{}))
	require.NoError(t, <-done)
	close(got)

	var lines []string
	for c := range got {
		lines = append(lines, string(c.Type)+" "+phaseOf(c.Old)+">"+phaseOf(c.New))
		if c.New != nil {
			assert.Equal(t, c.ResourceVersion, c.New.GetResourceVersion())
		}
	}
	assert.Equal(t, []string{
		"ADDED ->", "MODIFIED >Pending", "MODIFIED Pending>Scheduling", "MODIFIED Scheduling>Scheduled",
		"MODIFIED Scheduled>Running", "MODIFIED Running>Succeeded", "DELETED Succeeded>-",
	}, lines)
}

func TestWatchChangesResumes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := store.NewMemory()
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "v"}}
	require.NoError(t, s.Create(ctx, vmi))
	setPhase(t, s, vmi, virtkit.Pending)

	// A consumer saw everything up to Pending, then stopped.
	var seen store.Change
	err := store.WatchChanges(ctx, s, &virtkit.VirtualMachineInstanceList{}, store.ChangeOptions{}, func(c store.Change) error {
		seen = c
		return store.StopWatching()
	})
	require.NoError(t, err)
	require.Equal(t, "Pending", phaseOf(seen.New))

	// Meanwhile the VMI moved on twice.
	setPhase(t, s, vmi, virtkit.Scheduled)
	setPhase(t, s, vmi, virtkit.Running)

	var lines []string
	err = store.WatchChanges(ctx, s, &virtkit.VirtualMachineInstanceList{},
		store.ChangeOptions{ResourceVersion: seen.ResourceVersion, Known: []virtkit.Object{seen.New}},
		func(c store.Change) error {
			lines = append(lines, phaseOf(c.Old)+">"+phaseOf(c.New))
			if phaseOf(c.New) == "Running" {
				return store.StopWatching()
			}
			return nil
		})
	require.NoError(t, err)
	assert.Equal(t, []string{"Pending>Scheduled", "Scheduled>Running"}, lines)
}

func TestWatchChangesErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := store.NewMemory()
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "v"}}
	require.NoError(t, s.Create(ctx, vmi))
	rv := vmi.ResourceVersion
	setPhase(t, s, vmi, virtkit.Pending)

	boom := errors.New("boom")
	err := store.WatchChanges(ctx, s, &virtkit.VirtualMachineInstanceList{}, store.ChangeOptions{}, func(store.Change) error { return boom })
	assert.ErrorIs(t, err, boom, "the consumer's error ends the watch")

	require.NoError(t, s.Compact(ctx))
	err = store.WatchChanges(ctx, s, &virtkit.VirtualMachineInstanceList{}, store.ChangeOptions{ResourceVersion: rv}, func(store.Change) error { return nil })
	assert.ErrorIs(t, err, store.ErrExpired, "a compacted history is an error, not a silent gap")

	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	err = store.WatchChanges(cctx, s, &virtkit.VirtualMachineInstanceList{}, store.ChangeOptions{}, func(store.Change) error { return nil })
	assert.Error(t, err, "a cancelled context fails the initial list")
}
