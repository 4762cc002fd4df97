package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// thing is a minimal kind so the runner is tested without the object model.
type thing struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (t *thing) DeepCopyObject() runtime.Object {
	c := &thing{TypeMeta: t.TypeMeta}
	t.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return c
}

type thingList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []thing
}

func (l *thingList) DeepCopyObject() runtime.Object {
	c := &thingList{TypeMeta: l.TypeMeta, ListMeta: l.ListMeta}
	for i := range l.Items {
		c.Items = append(c.Items, *l.Items[i].DeepCopyObject().(*thing))
	}
	return c
}

func newThing(ns, name string, owner string) *thing {
	t := &thing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if owner != "" {
		yes := true
		t.OwnerReferences = []metav1.OwnerReference{{Kind: "Owner", Name: owner, Controller: &yes}}
	}
	return t
}

// fakeSource is a scripted WatchLister: objects, a resourceVersion counter,
// watchers that receive events, and a switch that expires every watch.
type fakeSource struct {
	mu       sync.Mutex
	rv       int
	objs     map[string]*thing
	watchers []chan store.Event
	lists    int
	watches  int
}

func newFakeSource() *fakeSource { return &fakeSource{objs: map[string]*thing{}} }

func (f *fakeSource) List(_ context.Context, list virtkit.ObjectList, _ store.ListOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	l := list.(*thingList)
	for _, o := range f.objs {
		l.Items = append(l.Items, *o.DeepCopyObject().(*thing))
	}
	l.ResourceVersion = strconv.Itoa(f.rv)
	return nil
}

func (f *fakeSource) Watch(ctx context.Context, _ virtkit.ObjectList, _ store.WatchOptions) (<-chan store.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watches++
	ch := make(chan store.Event, 100)
	f.watchers = append(f.watchers, ch)
	return ch, nil
}

// put stores obj and, if notify, tells every watcher.
func (f *fakeSource) put(obj *thing, notify bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
	obj.ResourceVersion = strconv.Itoa(f.rv)
	f.objs[obj.Namespace+"/"+obj.Name] = obj
	if notify {
		for _, w := range f.watchers {
			w <- store.Event{Type: store.Modified, Object: obj.DeepCopyObject().(*thing)}
		}
	}
}

// expire ends every open watch with an ErrExpired error event.
func (f *fakeSource) expire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.watchers {
		w <- store.Event{Type: store.Error, Err: fmt.Errorf("watch: %w", store.ErrExpired)}
		close(w)
	}
	f.watchers = nil
}

func (f *fakeSource) counts() (lists, watches int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists, f.watches
}

func thingWatch(m MapFunc) Watch {
	return Watch{NewList: func() virtkit.ObjectList { return &thingList{} }, Map: m}
}

// recorder counts reconciles per key and checks that no key is reconciled
// twice at once.
type recorder struct {
	mu       sync.Mutex
	calls    map[Request]int
	inFlight map[Request]bool
	overlap  atomic.Bool
	fn       func(ctx context.Context, req Request, call int) (Result, error)
}

func newRecorder(fn func(ctx context.Context, req Request, call int) (Result, error)) *recorder {
	return &recorder{calls: map[Request]int{}, inFlight: map[Request]bool{}, fn: fn}
}

func (r *recorder) Reconcile(ctx context.Context, req Request) (Result, error) {
	r.mu.Lock()
	if r.inFlight[req] {
		r.overlap.Store(true)
	}
	r.inFlight[req] = true
	r.calls[req]++
	n := r.calls[req]
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inFlight[req] = false
		r.mu.Unlock()
	}()
	if r.fn == nil {
		return Result{}, nil
	}
	return r.fn(ctx, req, n)
}

func (r *recorder) count(req Request) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[req]
}

// start runs c until the test's bubble ends.
func start(t *testing.T, c *Controller) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	src := newFakeSource()
	rec := ReconcilerFunc(func(context.Context, Request) (Result, error) { return Result{}, nil })
	tests := []struct {
		name    string
		src     WatchLister
		rec     Reconciler
		opts    Options
		watches []Watch
		field   string
	}{
		{"no source", nil, rec, Options{}, []Watch{thingWatch(nil)}, "source"},
		{"no reconciler", src, nil, Options{}, []Watch{thingWatch(nil)}, "reconciler"},
		{"no watches", src, rec, Options{}, nil, "watches"},
		{"watch without list", src, rec, Options{}, []Watch{{}}, "watches[0].NewList"},
		{"negative workers", src, rec, Options{MaxConcurrentReconciles: -1}, []Watch{thingWatch(nil)}, "MaxConcurrentReconciles"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.src, tt.rec, tt.opts, tt.watches...)
			require.ErrorIs(t, err, virtkit.ErrInvalidOptions)
			assert.Contains(t, err.Error(), tt.field)
		})
	}
}

func TestStartTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := New(newFakeSource(), newRecorder(nil), Options{}, thingWatch(nil))
		require.NoError(t, err)
		stop := start(t, c)
		synctest.Wait()
		require.ErrorIs(t, c.Start(t.Context()), ErrAlreadyStarted)
		stop()
	})
}

func TestInitialListAndEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		src.put(newThing("ns", "a", ""), false)
		src.put(newThing("ns", "b", ""), false)
		rec := newRecorder(nil)
		c, err := New(src, rec, Options{}, thingWatch(nil))
		require.NoError(t, err)
		stop := start(t, c)
		synctest.Wait()
		assert.Equal(t, 1, rec.count(Request{"ns", "a"}))
		assert.Equal(t, 1, rec.count(Request{"ns", "b"}))

		src.put(newThing("ns", "a", ""), true)
		synctest.Wait()
		assert.Equal(t, 2, rec.count(Request{"ns", "a"}))
		assert.Equal(t, 1, rec.count(Request{"ns", "b"}))
		stop()
		assert.EqualValues(t, 3, c.Stats().Reconciles)
	})
}

func TestMapToOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		src.put(newThing("ns", "child-1", "parent"), false)
		src.put(newThing("ns", "child-2", "parent"), false)
		src.put(newThing("ns", "orphan", ""), false)
		rec := newRecorder(nil)
		c, err := New(src, rec, Options{}, thingWatch(ControllerOwner("Owner")))
		require.NoError(t, err)
		stop := start(t, c)
		synctest.Wait()
		stop()
		// Children map to their owner; the orphan maps to nothing. Two
		// children queued before a worker is free collapse into one
		// reconcile; a worker that takes the first before the second
		// arrives reconciles the owner again, so one or two.
		require.Len(t, rec.calls, 1)
		n, ok := rec.calls[Request{"ns", "parent"}]
		require.True(t, ok, "the owner is reconciled: %v", rec.calls)
		assert.True(t, n == 1 || n == 2, "owner reconciles: %d", n)
	})
}

func TestOneReconcilePerKeyAndDedup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		rec := newRecorder(func(ctx context.Context, req Request, call int) (Result, error) {
			if req.Name == "slow" && call == 1 {
				<-release
			}
			return Result{}, nil
		})
		c, err := New(newFakeSource(), rec, Options{MaxConcurrentReconciles: 4}, thingWatch(nil))
		require.NoError(t, err)
		stop := start(t, c)
		slow := Request{"ns", "slow"}
		c.Enqueue(slow)
		synctest.Wait()
		require.Equal(t, 1, rec.count(slow))

		// While "slow" runs, many adds of it collapse into one pending item,
		// and other keys proceed on the other workers.
		for range 10 {
			c.Enqueue(slow)
		}
		c.Enqueue(Request{"ns", "other"})
		synctest.Wait()
		assert.Equal(t, 1, rec.count(slow), "a key is not handed out while it is reconciled")
		assert.Equal(t, 1, rec.count(Request{"ns", "other"}))

		close(release)
		synctest.Wait()
		assert.Equal(t, 2, rec.count(slow), "ten adds during the reconcile give one more reconcile")
		assert.False(t, rec.overlap.Load())
		stop()
	})
}

func TestRequeueAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder(func(_ context.Context, _ Request, call int) (Result, error) {
			if call < 3 {
				return Result{RequeueAfter: time.Minute}, nil
			}
			return Result{}, nil
		})
		c, err := New(newFakeSource(), rec, Options{}, thingWatch(nil))
		require.NoError(t, err)
		stop := start(t, c)
		req := Request{"ns", "a"}
		c.Enqueue(req)
		synctest.Wait()
		assert.Equal(t, 1, rec.count(req))
		time.Sleep(59 * time.Second)
		synctest.Wait()
		assert.Equal(t, 1, rec.count(req), "not before RequeueAfter")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, 2, rec.count(req))
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, 3, rec.count(req), "no requeue once the result is empty")
		stop()
		assert.EqualValues(t, 2, c.Stats().Requeues)
	})
}

// countingLimiter records how often a retry delay was asked for.
type countingLimiter struct {
	workqueue.TypedRateLimiter[Request]
	whens atomic.Int32
}

func (l *countingLimiter) When(r Request) time.Duration {
	l.whens.Add(1)
	return l.TypedRateLimiter.When(r)
}

func TestErrorsRetryWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder(func(_ context.Context, _ Request, call int) (Result, error) {
			if call <= 3 {
				return Result{RequeueAfter: time.Hour}, errors.New("boom")
			}
			return Result{}, nil
		})
		lim := &countingLimiter{TypedRateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[Request](time.Second, time.Minute)}
		c, err := New(newFakeSource(), rec, Options{RateLimiter: lim}, thingWatch(nil))
		require.NoError(t, err)
		stop := start(t, c)
		req := Request{"ns", "a"}
		c.Enqueue(req)
		synctest.Wait()
		assert.Equal(t, 1, rec.count(req))
		// Backoff 1 s, 2 s, 4 s: the fourth call comes 7 s after the first.
		time.Sleep(6500 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 3, rec.count(req))
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, 4, rec.count(req))
		stop()
		assert.EqualValues(t, 3, lim.whens.Load())
		st := c.Stats()
		assert.EqualValues(t, 3, st.ReconcileErrors)
		assert.EqualValues(t, 0, st.Requeues, "RequeueAfter is ignored when an error is returned")
		assert.EqualValues(t, 3, st.QueueRetries)
	})
}

func TestTerminalErrorIsRecordedNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cause := errors.New("spec.domain: impossible")
		rec := newRecorder(func(context.Context, Request, int) (Result, error) {
			return Result{}, fmt.Errorf("vm ns/a: %w", TerminalError(cause))
		})
		lim := &countingLimiter{TypedRateLimiter: DefaultRateLimiter()}
		var recorded []error
		c, err := New(newFakeSource(), rec, Options{
			RateLimiter: lim,
			OnTerminalError: func(_ context.Context, req Request, err error) {
				recorded = append(recorded, err)
			},
		}, thingWatch(nil))
		require.NoError(t, err)
		stop := start(t, c)
		c.Enqueue(Request{"ns", "a"})
		synctest.Wait()
		time.Sleep(time.Hour)
		synctest.Wait()
		stop()
		assert.Equal(t, 1, rec.count(Request{"ns", "a"}))
		assert.EqualValues(t, 0, lim.whens.Load())
		require.Len(t, recorded, 1)
		assert.ErrorIs(t, recorded[0], cause)
		assert.EqualValues(t, 1, c.Stats().TerminalErrors)
	})
}

func TestPanicIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder(func(_ context.Context, _ Request, call int) (Result, error) {
			if call == 1 {
				panic("bad object")
			}
			return Result{}, nil
		})
		c, err := New(newFakeSource(), rec, Options{}, thingWatch(nil))
		require.NoError(t, err)
		stop := start(t, c)
		c.Enqueue(Request{"ns", "a"})
		time.Sleep(time.Second)
		synctest.Wait()
		stop()
		assert.Equal(t, 2, rec.count(Request{"ns", "a"}))
		assert.EqualValues(t, 1, c.Stats().ReconcileErrors)
	})
}

func TestRelistOnExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		rec := newRecorder(nil)
		c, err := New(src, rec, Options{ResyncPeriod: -1}, thingWatch(nil))
		require.NoError(t, err)
		stop := start(t, c)
		synctest.Wait()
		lists, watches := src.counts()
		require.Equal(t, 1, lists)
		require.Equal(t, 1, watches)

		// A change the watch never delivers, then the watch expires: the
		// relist must find it.
		src.put(newThing("ns", "missed", ""), false)
		src.expire()
		synctest.Wait()
		lists, watches = src.counts()
		assert.Equal(t, 2, lists)
		assert.Equal(t, 2, watches)
		assert.Equal(t, 1, rec.count(Request{"ns", "missed"}))
		stop()
		assert.EqualValues(t, 2, c.Stats().Relists)
	})
}

func TestResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		src.put(newThing("ns", "a", ""), false)
		rec := newRecorder(nil)
		c, err := New(src, rec, Options{ResyncPeriod: time.Minute}, thingWatch(nil))
		require.NoError(t, err)
		stop := start(t, c)
		synctest.Wait()
		assert.Equal(t, 1, rec.count(Request{"ns", "a"}))
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		assert.Equal(t, 2, rec.count(Request{"ns", "a"}))
		stop()
	})
}

func TestTerminalErrorDetection(t *testing.T) {
	base := errors.New("base")
	tests := []struct {
		name     string
		err      error
		terminal bool
	}{
		{"nil", nil, false},
		{"plain", base, false},
		{"terminal", TerminalError(base), true},
		{"wrapped terminal", fmt.Errorf("ctx: %w", TerminalError(base)), true},
		{"terminal of nil", TerminalError(nil), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.terminal, IsTerminal(tt.err))
			assert.Equal(t, tt.terminal, errors.Is(tt.err, TerminalError(nil)))
		})
	}
	assert.ErrorIs(t, TerminalError(base), base, "the cause stays reachable")
}

// TestRelistWhenTheStoreDropsASlowWatcher uses the real memory store: a
// watcher that falls more than WatchBuffer events behind is dropped with
// ErrExpired, and the runner must relist and still see every object.
func TestRelistWhenTheStoreDropsASlowWatcher(t *testing.T) {
	st, err := store.NewMemoryWithOptions(store.Options{WatchBuffer: 2})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	release := make(chan struct{})
	var blocked atomic.Bool
	slowMap := func(ctx context.Context, obj virtkit.Object) []Request {
		// Hold the watch goroutine on the first event so the store's
		// buffer for it overflows.
		if blocked.CompareAndSwap(false, true) {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return ObjectKey(ctx, obj)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	rec := ReconcilerFunc(func(_ context.Context, req Request) (Result, error) {
		mu.Lock()
		defer mu.Unlock()
		seen[req.Name] = true
		return Result{}, nil
	})
	c, err := New(st, rec, Options{ResyncPeriod: -1}, Watch{
		NewList: func() virtkit.ObjectList { return &virtkit.VirtualMachineList{} },
		Map:     slowMap,
	})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { assert.NoError(t, c.Start(ctx)); close(done) }()

	// Wait for the initial (empty) list, then write more than the buffer.
	require.Eventually(t, func() bool { return c.Stats().Relists == 1 }, 5*time.Second, time.Millisecond)
	const n = 20
	for i := range n {
		vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("vm%d", i)}}
		require.NoError(t, st.Create(ctx, vm))
	}
	close(release)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n
	}, 5*time.Second, time.Millisecond, "every object is reconciled after the relist")
	assert.GreaterOrEqual(t, c.Stats().Relists, uint64(2), "the dropped watch was followed by a relist")
	cancel()
	<-done
}
