package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"k8s.io/utils/clock"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// errInvalidOptions wraps every configuration error of this package; it
// matches virtkit.ErrInvalidOptions.
var errInvalidOptions = virtkit.InvalidOptions("events")

// Defaults of [Options] and [CollectorOptions].
const (
	// DefaultWindow is how long a repeat still joins an event's series.
	DefaultWindow = 10 * time.Minute
	// DefaultBurst and DefaultRefill bound the writes per regarding
	// object (client-go's spam filter: 25, then one per 5 minutes).
	DefaultBurst  = 25
	DefaultRefill = 5 * time.Minute
	// DefaultCacheSize bounds the series the recorder remembers.
	DefaultCacheSize = 4096
	// DefaultTTL is how long an event is kept after its last observation.
	DefaultTTL = time.Hour
	// DefaultNamespace holds the events of cluster-scoped objects.
	DefaultNamespace = "default"
	// DefaultMaxRetries and DefaultRetryInterval bound the retries of a
	// failed write: client-go's event broadcaster tries an event 12 times,
	// 10 seconds apart, so an event recorded during a short API server
	// outage still lands.
	DefaultMaxRetries    = 11
	DefaultRetryInterval = 10 * time.Second
	// DefaultMaxPending bounds the failed writes waiting for their retry
	// (client-go queues at most 1000 events).
	DefaultMaxPending = 1000
)

// Options configure a [Recorder]. Store is required.
type Options struct {
	Store store.Store
	// ReportingController names the component in every event
	// (reportingController, deprecatedSource.component); default
	// "virtkit.io/virtkit".
	ReportingController string
	// ReportingInstance names this instance of it (a host name); default
	// ReportingController.
	ReportingInstance string
	// Window: a repeat within it updates the existing event's series;
	// default DefaultWindow.
	Window time.Duration
	// Burst and Refill bound the writes per regarding object: Burst writes
	// at once, then one per Refill. Defaults DefaultBurst, DefaultRefill.
	Burst  int
	Refill time.Duration
	// CacheSize bounds the remembered series; default DefaultCacheSize.
	CacheSize int
	// Clock stamps the events and times the retries of failed writes (a
	// virtual clock in simulations); nil is the real clock.
	Clock clock.Clock
	// MaxRetries is how many more times a write the store failed to carry
	// out (unreachable, timed out, cancelled caller) is tried, RetryInterval
	// apart, while [Recorder.Start] runs; a write the store rejects (a store
	// sentinel error such as store.ErrInvalid) is never retried. Zero means
	// DefaultMaxRetries, a negative value no retries.
	MaxRetries int
	// RetryInterval separates the tries of a write; default
	// DefaultRetryInterval.
	RetryInterval time.Duration
	// MaxPending bounds the writes waiting for a retry; once full, the
	// oldest is given up. Default DefaultMaxPending.
	MaxPending int
	// Logger receives write failures (at debug level: events are best
	// effort); nil discards them.
	Logger *slog.Logger
}

// Stats counts what a recorder did.
type Stats struct {
	// Created and Updated are store writes (new events, series updates).
	Created, Updated int
	// Throttled are occurrences that had no write token; they are counted
	// in their series and written with its next update.
	Throttled int
	// Failed are writes the store refused (first tries and retries).
	Failed int
	// Retries are the retries of failed writes; Retried the ones that
	// landed.
	Retries, Retried int
	// GaveUp are failed writes abandoned: rejected by the store, out of
	// tries, pushed out of a full retry queue, or pending when the
	// recorder stopped (or with no Start running to retry them).
	GaveUp int
}

// Recorder writes events to a store. It is safe for concurrent use.
type Recorder struct {
	o Options

	mu      sync.Mutex
	series  map[seriesKey]*series
	buckets map[objectKey]*bucket
	stats   Stats
	retries retryQueue
}

type objectKey struct {
	kind, namespace, name, uid string
}

type seriesKey struct {
	obj                       objectKey
	typ, reason, action, note string
}

type series struct {
	mu sync.Mutex // held during the store write of this series
	// ev is the stored event (nil before the first write succeeded).
	ev       *virtkit.Event
	first    time.Time
	last     time.Time
	count    int32
	written  int32 // count as last written
	lastSeen time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

// NewRecorder returns a recorder writing to o.Store.
func NewRecorder(o Options) (*Recorder, error) {
	if o.Store == nil {
		return nil, fmt.Errorf("%w: Store: required", errInvalidOptions)
	}
	if o.ReportingController == "" {
		o.ReportingController = "virtkit.io/virtkit"
	}
	if o.ReportingInstance == "" {
		o.ReportingInstance = o.ReportingController
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.Refill <= 0 {
		o.Refill = DefaultRefill
	}
	if o.CacheSize <= 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = DefaultMaxRetries
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = DefaultRetryInterval
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Recorder{o: o, series: map[seriesKey]*series{}, buckets: map[objectKey]*bucket{},
		retries: retryQueue{wake: make(chan struct{}, 1)}}, nil
}

// Stats returns what the recorder has done so far.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Eventf records an event with a formatted note.
func (r *Recorder) Eventf(ctx context.Context, regarding virtkit.Object, eventType, reason, action, format string, args ...any) {
	r.Event(ctx, regarding, eventType, reason, action, fmt.Sprintf(format, args...))
}

// Event records that reason happened to regarding. eventType is
// virtkit.EventTypeNormal or virtkit.EventTypeWarning (anything else is
// recorded as Warning); note is cut to virtkit.MaxEventNoteLength bytes.
// Event never fails the caller: store errors are counted and logged, and
// a write the store failed to carry out is retried in the background
// while [Recorder.Start] runs (Options.MaxRetries).
func (r *Recorder) Event(ctx context.Context, regarding virtkit.Object, eventType, reason, action, note string) {
	if regarding == nil || regarding.GetName() == "" || reason == "" {
		return
	}
	if eventType != virtkit.EventTypeNormal {
		eventType = virtkit.EventTypeWarning
	}
	reason = truncate(reason, virtkit.MaxEventReasonLength)
	action = truncate(action, virtkit.MaxEventReasonLength)
	note = truncate(note, virtkit.MaxEventNoteLength)
	ref := virtkit.ReferenceTo(regarding)
	ok := objectKey{kind: ref.Kind, namespace: ref.Namespace, name: ref.Name, uid: string(ref.UID)}
	key := seriesKey{obj: ok, typ: eventType, reason: reason, action: action, note: note}
	now := r.o.Clock.Now()

	r.mu.Lock()
	s := r.series[key]
	if s == nil || now.Sub(s.lastSeen) > r.o.Window {
		r.evictLocked(now)
		s = &series{first: now}
		r.series[key] = s
	}
	s.count++
	s.last, s.lastSeen = now, now
	allowed := r.takeLocked(ok, now)
	if !allowed {
		r.stats.Throttled++
	}
	r.mu.Unlock()
	if !allowed {
		return
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	r.mu.Lock()
	count, first, last := s.count, s.first, s.last
	r.mu.Unlock()
	if count == s.written {
		return // a concurrent write already carried this occurrence
	}
	created, err := r.write(ctx, s, ref, eventType, reason, action, note, count, first, last)
	r.mu.Lock()
	switch {
	case err != nil:
		r.stats.Failed++
	case created:
		r.stats.Created++
	default:
		r.stats.Updated++
	}
	r.mu.Unlock()
	if err != nil {
		r.o.Logger.Debug("event not recorded", "regarding", ref.Kind+" "+store.Key{Namespace: ref.Namespace, Name: ref.Name}.String(),
			"reason", reason, "err", err)
		r.retryLater(&pendingWrite{s: s, ref: ref, typ: eventType, reason: reason, action: action, note: note}, err)
	}
}

// write creates the series' event or updates its count; s.mu is held.
func (r *Recorder) write(ctx context.Context, s *series, ref virtkit.ObjectReference, typ, reason, action, note string,
	count int32, first, last time.Time) (created bool, err error) {
	if s.ev != nil {
		ev := s.ev.DeepCopy()
		setCount(ev, count, last)
		err := r.o.Store.Update(ctx, ev)
		if err == nil {
			s.ev, s.written = ev, count
			return false, nil
		}
		if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
			return false, err
		}
		// Collected or changed by someone else: start a new event that
		// carries the whole count.
	}
	ns := ref.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	ev := &virtkit.Event{
		ObjectMeta:               metav1.ObjectMeta{Namespace: ns, GenerateName: eventNamePrefix(ref.Name)},
		EventTime:                metav1.NewMicroTime(first),
		ReportingController:      r.o.ReportingController,
		ReportingInstance:        r.o.ReportingInstance,
		Action:                   action,
		Reason:                   reason,
		Regarding:                ref,
		Note:                     note,
		Type:                     typ,
		DeprecatedSource:         virtkit.EventSource{Component: r.o.ReportingController, Host: r.o.ReportingInstance},
		DeprecatedFirstTimestamp: metav1.NewTime(first),
	}
	setCount(ev, count, last)
	if err := r.o.Store.Create(ctx, ev); err != nil {
		return true, err
	}
	s.ev, s.written = ev, count
	return true, nil
}

func setCount(ev *virtkit.Event, count int32, last time.Time) {
	ev.DeprecatedCount = count
	ev.DeprecatedLastTimestamp = metav1.NewTime(last)
	if count > 1 {
		ev.Series = &virtkit.EventSeries{Count: count, LastObservedTime: metav1.NewMicroTime(last)}
	}
}

// takeLocked takes a write token of obj's bucket.
func (r *Recorder) takeLocked(obj objectKey, now time.Time) bool {
	b := r.buckets[obj]
	if b == nil {
		b = &bucket{tokens: float64(r.o.Burst), at: now}
		r.buckets[obj] = b
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(float64(r.o.Burst), b.tokens+float64(d)/float64(r.o.Refill))
		b.at = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// evictLocked keeps the caches within CacheSize: once full, it drops series
// that left their window, then (still above three quarters of CacheSize)
// arbitrary ones, and full buckets. Evicting down to a low-water mark rather
// than by one makes the scan happen once per CacheSize/4 new series, not on
// every new series of a busy recorder.
func (r *Recorder) evictLocked(now time.Time) {
	if len(r.series) < r.o.CacheSize {
		return
	}
	lowWater := r.o.CacheSize - r.o.CacheSize/4
	for k, s := range r.series {
		if now.Sub(s.lastSeen) > r.o.Window {
			delete(r.series, k)
		}
	}
	for k := range r.series {
		if len(r.series) < lowWater {
			break
		}
		delete(r.series, k)
	}
	for k, b := range r.buckets {
		if b.tokens+float64(now.Sub(b.at))/float64(r.o.Refill) >= float64(r.o.Burst) {
			delete(r.buckets, k)
		}
	}
}

// eventNamePrefix is the generateName of an event about name: the name and
// a dot, cut so the generated name stays a valid object name.
func eventNamePrefix(name string) string {
	const maxPrefix = 253 - 10
	if len(name) > maxPrefix-1 {
		name = name[:maxPrefix-1]
	}
	return strings.TrimRight(name, ".-") + "."
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// Discard records nothing: pass it where a recorder is required and no
// events are wanted.
type Discard struct{}

// Event does nothing.
func (Discard) Event(context.Context, virtkit.Object, string, string, string, string) {}
