package actions_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/store"
)

// raceStore plays the node and the VM controller between a forced stop's
// two writes: once the VMI's grace period is shortened, the node destroys
// the guest (the VMI goes) and the controller's status write makes the
// stop's VM update conflict.
type raceStore struct {
	store.Store
	vmiKey  store.Key
	updated bool // the VMI's grace period was written
	raced   bool
}

func (s *raceStore) Update(ctx context.Context, obj virtkit.Object) error {
	switch obj.(type) {
	case *virtkit.VirtualMachineInstance:
		if err := s.Store.Update(ctx, obj); err != nil {
			return err
		}
		s.updated = true
		return nil
	case *virtkit.VirtualMachine:
		if s.updated && !s.raced {
			s.raced = true
			if err := s.Store.Delete(ctx, &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: s.vmiKey.Namespace, Name: s.vmiKey.Name}}, store.DeleteOptions{}); err != nil {
				return err
			}
			return store.ErrConflict
		}
	}
	return s.Store.Update(ctx, obj)
}

func (s *raceStore) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	if _, ok := obj.(*virtkit.VirtualMachine); ok && s.updated && !s.raced {
		s.raced = true
		if err := s.Store.Delete(ctx, &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: s.vmiKey.Namespace, Name: s.vmiKey.Name}}, store.DeleteOptions{}); err != nil {
			return err
		}
		return store.ErrConflict
	}
	return s.Store.UpdateStatus(ctx, obj)
}

// A forced stop whose shortened grace period the node acts on before the
// stop's own retry has succeeded: the retry must not report "VM is not
// running" for the guest it has just stopped.
func TestForcedStopRetryAfterTheGuestWent(t *testing.T) {
	for _, rs := range []virtkit.VirtualMachineRunStrategy{virtkit.RunStrategyHalted, virtkit.RunStrategyManual} {
		t.Run(string(rs), func(t *testing.T) {
			ctx := context.Background()
			key := store.Key{Namespace: "demo", Name: "vm1"}
			mem := store.NewMemory()
			strategy := rs
			vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
			vm.Spec.RunStrategy = &strategy
			require.NoError(t, mem.Create(ctx, vm))
			grace := int64(180)
			vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
			vmi.Spec.TerminationGracePeriodSeconds = &grace
			require.NoError(t, mem.Create(ctx, vmi))
			vmi.Status.Phase = virtkit.Running
			require.NoError(t, mem.UpdateStatus(ctx, vmi))

			st := &raceStore{Store: mem, vmiKey: key}
			zero := int64(0)
			require.NoError(t, actions.Stop(ctx, st, key, actions.StopOptions{GracePeriod: &zero}))
			require.True(t, st.raced, "the race was played")

			// Without the race, a stop of a VM with no VMI is still refused.
			err := actions.Stop(ctx, mem, key, actions.StopOptions{GracePeriod: &zero})
			require.ErrorIs(t, err, actions.ErrConflictingAction)
		})
	}
}
