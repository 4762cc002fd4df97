package events_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// stores runs f against the memory store and a real (embedded) etcd.
func stores(t *testing.T, f func(t *testing.T, s store.Store)) {
	t.Run("memory", func(t *testing.T) { f(t, store.NewMemory()) })
	t.Run("etcd", func(t *testing.T) {
		if testing.Short() {
			t.Skip("embedded etcd: skipped with -short")
		}
		eps := etcdtest.StartServer(t)
		s, err := etcd.New(t.Context(), etcd.Options{Endpoints: eps, Prefix: "/events-test"})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		f(t, s)
	})
}

func listEvents(t *testing.T, s store.Store) []virtkit.Event {
	t.Helper()
	var l virtkit.EventList
	require.NoError(t, s.List(context.Background(), &l, store.ListOptions{}))
	return l.Items
}

func vm(name string) *virtkit.VirtualMachine {
	return &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
}

func TestRecorderAggregatesRepeats(t *testing.T) {
	stores(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		clk := testingclock.NewFakeClock(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
		rec, err := events.NewRecorder(events.Options{Store: s, ReportingController: "virtkit.io/test", ReportingInstance: "host-1", Clock: clk})
		require.NoError(t, err)

		for range 3 {
			rec.Event(ctx, vm("a"), virtkit.EventTypeNormal, "SuccessfulCreate", "Create", "Created virtual machine instance a")
			clk.Step(time.Second)
		}
		rec.Event(ctx, vm("a"), virtkit.EventTypeNormal, "SuccessfulCreate", "Create", "another note")
		rec.Event(ctx, vm("b"), virtkit.EventTypeWarning, "FailedCreate", "Create", "no room")

		evs := listEvents(t, s)
		require.Len(t, evs, 3, "same regarding+reason+note is one event")
		byNote := map[string]virtkit.Event{}
		for _, e := range evs {
			byNote[e.Note] = e
			assert.Empty(t, virtkit.Validate(&e), "stored events validate")
			assert.Equal(t, "ns", e.Namespace)
			assert.Equal(t, "virtkit.io/test", e.ReportingController)
			assert.Equal(t, "host-1", e.ReportingInstance)
			assert.Equal(t, virtkit.EventSource{Component: "virtkit.io/test", Host: "host-1"}, e.DeprecatedSource)
		}
		rep := byNote["Created virtual machine instance a"]
		require.NotNil(t, rep.Series)
		assert.Equal(t, int32(3), rep.Series.Count)
		assert.Equal(t, int32(3), rep.DeprecatedCount)
		assert.Equal(t, clk.Now().Add(-time.Second).Unix(), rep.Series.LastObservedTime.Unix())
		assert.Equal(t, clk.Now().Add(-3*time.Second).Unix(), rep.EventTime.Unix(), "eventTime is the first occurrence")
		assert.Equal(t, virtkit.ObjectReference{Kind: "VirtualMachine", APIVersion: "kubevirt.io/v1", Namespace: "ns", Name: "a", UID: "uid-a"}, rep.Regarding)
		assert.Nil(t, byNote["another note"].Series, "a singleton has no series")
		assert.Equal(t, "Warning", byNote["no room"].Type)

		// After the window a repeat starts a new event.
		clk.Step(events.DefaultWindow + time.Second)
		rec.Event(ctx, vm("a"), virtkit.EventTypeNormal, "SuccessfulCreate", "Create", "Created virtual machine instance a")
		assert.Len(t, listEvents(t, s), 4)
		assert.Equal(t, events.Stats{Created: 4, Updated: 2}, rec.Stats())
	})
}

func TestRecorderBoundsWritesPerObject(t *testing.T) {
	ctx := context.Background()
	s := store.NewMemory()
	clk := testingclock.NewFakeClock(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	rec, err := events.NewRecorder(events.Options{Store: s, Burst: 2, Refill: time.Minute, Clock: clk})
	require.NoError(t, err)

	for range 10 {
		rec.Event(ctx, vm("a"), virtkit.EventTypeWarning, "SyncFailed", "Sync", "disk missing")
	}
	rec.Event(ctx, vm("a"), virtkit.EventTypeWarning, "Other", "Sync", "x")
	rec.Event(ctx, vm("b"), virtkit.EventTypeWarning, "SyncFailed", "Sync", "disk missing")
	st := rec.Stats()
	assert.Equal(t, 3, st.Created+st.Updated, "two writes for a, one for b")
	assert.Equal(t, 9, st.Throttled)

	// The throttled occurrences are counted in the next write of their
	// series once a token is back.
	clk.Step(time.Minute)
	rec.Event(ctx, vm("a"), virtkit.EventTypeWarning, "SyncFailed", "Sync", "disk missing")
	var found bool
	for _, e := range listEvents(t, s) {
		if e.Reason == "SyncFailed" && e.Regarding.Name == "a" {
			found = true
			require.NotNil(t, e.Series)
			assert.Equal(t, int32(11), e.Series.Count)
		}
	}
	assert.True(t, found)
}

func TestRecorderBoundsInput(t *testing.T) {
	ctx := context.Background()
	s := store.NewMemory()
	rec, err := events.NewRecorder(events.Options{Store: s})
	require.NoError(t, err)
	long := bytes.Repeat([]byte("é"), 2000)
	node := &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	rec.Event(ctx, node, "Bogus", "NodeUnresponsive", "Monitor", string(long))
	rec.Event(ctx, nil, virtkit.EventTypeNormal, "R", "A", "ignored")
	rec.Event(ctx, vm("a"), virtkit.EventTypeNormal, "", "A", "no reason: ignored")
	evs := listEvents(t, s)
	require.Len(t, evs, 1)
	e := evs[0]
	assert.Equal(t, events.DefaultNamespace, e.Namespace, "events of cluster-scoped objects go to default")
	assert.Equal(t, "Warning", e.Type, "unknown types are warnings")
	assert.LessOrEqual(t, len(e.Note), virtkit.MaxEventNoteLength)
	assert.Empty(t, virtkit.Validate(&e))

	_, err = events.NewRecorder(events.Options{})
	assert.ErrorIs(t, err, virtkit.ErrInvalidOptions)
}

func TestEventManifestRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := store.NewMemory()
	rec, err := events.NewRecorder(events.Options{Store: s})
	require.NoError(t, err)
	rec.Event(ctx, vm("a"), virtkit.EventTypeNormal, "Started", "Start", "VirtualMachineInstance started")
	rec.Event(ctx, vm("a"), virtkit.EventTypeNormal, "Started", "Start", "VirtualMachineInstance started")
	ev := listEvents(t, s)[0]
	var buf bytes.Buffer
	require.NoError(t, virtkit.Encode(&buf, &ev))
	assert.Contains(t, buf.String(), "apiVersion: events.k8s.io/v1")
	assert.Contains(t, buf.String(), "reportingController:")
	objs, err := virtkit.Decode(&buf)
	require.NoError(t, err, "a stored event decodes strictly")
	require.Len(t, objs, 1)
	back := objs[0].(*virtkit.Event)
	assert.Equal(t, ev.Series.Count, back.Series.Count)
	assert.Equal(t, ev.Regarding, back.Regarding)
}
