package main

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// flakyEventStore misses every other event write, as a store that
// restarts or a short partition does.
type flakyEventStore struct {
	store.Store
	writes atomic.Int64
}

var errMissed = errors.New("store unreachable (missed by the test)")

func (s *flakyEventStore) miss(obj virtkit.Object) bool {
	_, isEvent := obj.(*virtkit.Event)
	return isEvent && s.writes.Add(1)%2 == 1
}

func (s *flakyEventStore) Create(ctx context.Context, obj virtkit.Object) error {
	if s.miss(obj) {
		return errMissed
	}
	return s.Store.Create(ctx, obj)
}

func (s *flakyEventStore) Update(ctx context.Context, obj virtkit.Object) error {
	if s.miss(obj) {
		return errMissed
	}
	return s.Store.Update(ctx, obj)
}

// The recorder of a virtkit node process runs its retries: an event whose
// write the store missed is written by a retry, reported by the node agent.
func TestNodeProcessEventsAreRetried(t *testing.T) {
	st := &flakyEventStore{Store: store.NewMemory()}
	ctx, cancel := context.WithCancel(t.Context())
	rec, wait, err := startNodeEvents(ctx, st, "n1", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { cancel(); wait() })
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", UID: "u1"},
	}
	require.Eventually(t, func() bool {
		// Once more each time: the first tries may come before the
		// retries run; every other write is missed.
		rec.Event(ctx, vmi, virtkit.EventTypeNormal, virtkit.EventReasonStarted, "Start", "VirtualMachineInstance started")
		return rec.Stats().Retried > 0
	}, 30*time.Second, 100*time.Millisecond, "a missed write is retried: %+v", rec.Stats())
	var l virtkit.EventList
	require.NoError(t, st.List(ctx, &l, store.ListOptions{Namespace: "default"}))
	require.NotEmpty(t, l.Items)
	require.Equal(t, virtkit.ReportingNodeAgent, l.Items[0].ReportingController)
	require.Equal(t, "n1", l.Items[0].ReportingInstance)
}
