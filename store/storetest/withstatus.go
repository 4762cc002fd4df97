package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/store"
)

// updateOnly hides a store's StatusWriter, so store.UpdateWithStatus takes
// its two-write fallback.
type updateOnly struct{ store.Store }

// testUpdateWithStatus checks store.UpdateWithStatus on the store as given
// (one write when it is a StatusWriter) and through the two-write fallback.
func testUpdateWithStatus(t *testing.T, s store.Store) {
	for _, tc := range []struct {
		name       string
		st         store.Store
		wantEvents int
	}{
		{"native", s, 1},
		{"fallback", updateOnly{s}, 2},
	} {
		if _, ok := s.(store.StatusWriter); !ok && tc.name == "native" {
			tc.wantEvents = 2
		}
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			w := widget("ns", "ws-"+tc.name, 1, map[string]string{"a": "1"})
			create(t, s, w)
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			events, err := s.Watch(wctx, &WidgetList{}, store.WatchOptions{Namespace: "ns", ResourceVersion: w.ResourceVersion})
			require.NoError(t, err)

			w.Labels["node"] = "n1"
			w.Finalizers = []string{"virtkit.io/f"}
			w.Status = WidgetStatus{Phase: "Scheduled", Count: 1}
			require.NoError(t, store.UpdateWithStatus(ctx, tc.st, w))
			assert.Equal(t, "Scheduled", w.Status.Phase, "obj keeps the status it carried")
			assert.Equal(t, int64(1), w.Generation, "no spec change, no new generation")

			got := &Widget{}
			require.NoError(t, s.Get(ctx, store.KeyOf(w), got))
			assert.Equal(t, WidgetStatus{Phase: "Scheduled", Count: 1}, got.Status)
			assert.Equal(t, "n1", got.Labels["node"])
			assert.Equal(t, []string{"virtkit.io/f"}, got.Finalizers)
			assert.Equal(t, w.ResourceVersion, got.ResourceVersion)

			var last *Widget
			for i := range tc.wantEvents {
				select {
				case ev := <-events:
					require.Equal(t, store.Modified, ev.Type, "event %d", i)
					last = ev.Object.(*Widget)
				case <-time.After(eventTimeout):
					t.Fatalf("event %d of %d not delivered", i+1, tc.wantEvents)
				}
			}
			assert.Equal(t, got.ResourceVersion, last.ResourceVersion, "the last event is the written state")
			assert.Equal(t, "n1", last.Labels["node"])
			assert.Equal(t, "Scheduled", last.Status.Phase)

			before := got.ResourceVersion
			require.NoError(t, store.UpdateWithStatus(ctx, tc.st, got))
			assert.Equal(t, before, got.ResourceVersion, "writing nothing new keeps the resourceVersion")

			stale := got.DeepCopy()
			got.Status.Count = 2
			require.NoError(t, store.UpdateWithStatus(ctx, tc.st, got))
			stale.Status.Count = 3
			requireWrapped(t, store.UpdateWithStatus(ctx, tc.st, stale), store.ErrConflict)
		})
	}
}
