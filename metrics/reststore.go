package metrics

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// Bucket bounds of the REST client histograms (KubeVirt's).
var (
	restLatencyBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60}
	rateLimiterBuckets = prometheus.ExponentialBuckets(0.001, 2, 10)
)

// InstrumentedStore is a store.Store that records every call as KubeVirt
// records its clients' calls to the Kubernetes API server: virtkit's
// control plane and node agents talk to their object store as KubeVirt's
// components talk to the API server. It is also the collector of those
// families:
//
//   - kubevirt_rest_client_requests_total{code,method,host,resource,verb}:
//     code is the HTTP status the API server would have answered (200, 201,
//     404, 409, 422, or "<error>" for a call that failed otherwise), method
//     the HTTP method, verb KubeVirt's verb (GET, LIST, WATCH, CREATE,
//     UPDATE, DELETE), host the store's name;
//   - kubevirt_rest_client_request_latency_seconds{verb,url}: url is the
//     object's API path with {namespace} and {name} templates;
//   - kubevirt_rest_client_rate_limiter_duration_seconds{verb,url}: the
//     store client has no client-side rate limiter, so every call is
//     observed with a zero wait;
//   - kubevirt_vm_created_by_pod_total{namespace}: VirtualMachines created
//     through this store.
//
// Register it once; use it wherever the store is used.
type InstrumentedStore struct {
	inner store.Store
	host  string
	kinds map[reflect.Type]kindPath

	mu       sync.Mutex
	requests map[[5]string]uint64
	latency  map[[2]string]*histogramSeries
	limiter  map[[2]string]*histogramSeries
	created  map[string]uint64

	fRequests, fLatency, fLimiter, fCreated *family
}

// kindPath is how a kind appears in the API: its resource and the path of
// its collection.
type kindPath struct {
	resource   string
	collection string // /apis/<group>/<version>[/namespaces/{namespace}]/<resource>
	vm         bool
}

var (
	_ store.Store          = (*InstrumentedStore)(nil)
	_ prometheus.Collector = (*InstrumentedStore)(nil)
)

// InstrumentStore wraps s. host names the store in the host label
// ("memory", an etcd endpoint); empty means "store".
func InstrumentStore(s store.Store, host string) (*InstrumentedStore, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: InstrumentStore: nil store", errInvalidOptions)
	}
	if host == "" {
		host = "store"
	}
	is := &InstrumentedStore{
		inner: s, host: host, kinds: map[reflect.Type]kindPath{},
		requests: map[[5]string]uint64{}, latency: map[[2]string]*histogramSeries{},
		limiter: map[[2]string]*histogramSeries{}, created: map[string]uint64{},
		fRequests: newFamily("kubevirt_rest_client_requests_total",
			"Number of HTTP requests, partitioned by status code, method, and host.", counter,
			"code", "method", "host", "resource", "verb"),
		fLatency: newHistogramFamily("kubevirt_rest_client_request_latency_seconds",
			"Request latency in seconds. Broken down by verb and URL.", "verb", "url"),
		fLimiter: newHistogramFamily("kubevirt_rest_client_rate_limiter_duration_seconds",
			"Client side rate limiter latency in seconds. Broken down by verb and URL.", "verb", "url"),
		fCreated: newFamily("kubevirt_vm_created_by_pod_total",
			"[Deprecated] The total number of VMs created by namespace, since the process started.", counter, "namespace"),
	}
	for _, gvk := range virtkit.KnownKinds() {
		kp := pathOf(gvk)
		if obj, err := virtkit.NewObject(gvk); err == nil {
			is.kinds[reflect.TypeOf(obj)] = kp
		}
		if l, err := virtkit.NewObjectList(gvk); err == nil {
			is.kinds[reflect.TypeOf(l)] = kp
		}
	}
	return is, nil
}

func pathOf(gvk schema.GroupVersionKind) kindPath {
	resource := strings.ToLower(gvk.Kind)
	if r, ok := strings.CutSuffix(resource, "y"); ok {
		resource = r + "ies"
	} else {
		resource += "s"
	}
	p := "/apis/" + gvk.Group + "/" + gvk.Version
	if gvk.Group == "" {
		p = "/api/" + gvk.Version
	}
	if virtkit.IsNamespaced(gvk) {
		p += "/namespaces/{namespace}"
	}
	return kindPath{resource: resource, collection: p + "/" + resource, vm: gvk.Kind == virtkit.KindVirtualMachine}
}

// Store returns the wrapped store.
func (s *InstrumentedStore) Store() store.Store { return s.inner }

// statusCode is the HTTP status an API server answers for err.
func statusCode(err error, ok string) string {
	switch {
	case err == nil:
		return ok
	case errors.Is(err, store.ErrNotFound):
		return "404"
	case errors.Is(err, store.ErrAlreadyExists), errors.Is(err, store.ErrConflict):
		return "409"
	case errors.Is(err, store.ErrInvalid):
		return "422"
	}
	return "<error>"
}

// record counts one call of verb (with its HTTP method) on obj's kind.
func (s *InstrumentedStore) record(obj any, method, verb, suffix, okCode string, start time.Time, err error) {
	d := time.Since(start).Seconds()
	kp, ok := s.kinds[reflect.TypeOf(obj)]
	resource, url := "none", "none"
	if ok {
		resource, url = kp.resource, kp.collection+suffix
	}
	key := [2]string{verb, url}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[[5]string{statusCode(err, okCode), method, s.host, resource, verb}]++
	observeInto(s.latency, key, restLatencyBuckets, d)
	observeInto(s.limiter, key, rateLimiterBuckets, 0)
}

func observeInto(m map[[2]string]*histogramSeries, key [2]string, bounds []float64, v float64) {
	h := m[key]
	if h == nil {
		h = &histogramSeries{labels: []string{key[0], key[1]}, perBucket: make([]uint64, len(bounds))}
		m[key] = h
	}
	h.count++
	h.sum += v
	if i, _ := slices.BinarySearch(bounds, v); i < len(bounds) {
		h.perBucket[i]++
	}
}

// Get implements store.Store.
func (s *InstrumentedStore) Get(ctx context.Context, key store.Key, obj virtkit.Object) error {
	start := time.Now()
	err := s.inner.Get(ctx, key, obj)
	s.record(obj, "GET", "GET", "/{name}", "200", start, err)
	return err
}

// List implements store.Store.
func (s *InstrumentedStore) List(ctx context.Context, list virtkit.ObjectList, opts store.ListOptions) error {
	start := time.Now()
	err := s.inner.List(ctx, list, opts)
	s.record(list, "GET", "LIST", "", "200", start, err)
	return err
}

// Create implements store.Store.
func (s *InstrumentedStore) Create(ctx context.Context, obj virtkit.Object) error {
	start := time.Now()
	err := s.inner.Create(ctx, obj)
	s.record(obj, "POST", "CREATE", "", "201", start, err)
	if err == nil && s.kinds[reflect.TypeOf(obj)].vm {
		s.mu.Lock()
		s.created[obj.GetNamespace()]++
		s.mu.Unlock()
	}
	return err
}

// Update implements store.Store.
func (s *InstrumentedStore) Update(ctx context.Context, obj virtkit.Object) error {
	start := time.Now()
	err := s.inner.Update(ctx, obj)
	s.record(obj, "PUT", "UPDATE", "/{name}", "200", start, err)
	return err
}

// UpdateStatus implements store.Store.
func (s *InstrumentedStore) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	start := time.Now()
	err := s.inner.UpdateStatus(ctx, obj)
	s.record(obj, "PUT", "UPDATE", "/{name}/status", "200", start, err)
	return err
}

// Delete implements store.Store.
func (s *InstrumentedStore) Delete(ctx context.Context, obj virtkit.Object, opts store.DeleteOptions) error {
	start := time.Now()
	err := s.inner.Delete(ctx, obj, opts)
	s.record(obj, "DELETE", "DELETE", "/{name}", "200", start, err)
	return err
}

// Watch implements store.Store; the latency is the time to establish the
// watch.
func (s *InstrumentedStore) Watch(ctx context.Context, list virtkit.ObjectList, opts store.WatchOptions) (<-chan store.Event, error) {
	start := time.Now()
	ch, err := s.inner.Watch(ctx, list, opts)
	s.record(list, "GET", "WATCH", "?watch=true", "200", start, err)
	return ch, err
}

// CorruptObjects forwards the wrapped store's report ([CorruptObjectSource]);
// nil when it keeps none.
func (s *InstrumentedStore) CorruptObjects() []store.CorruptError {
	if r, ok := s.inner.(store.CorruptReporter); ok {
		return r.CorruptObjects()
	}
	return nil
}

// Describe sends nothing (unchecked collector).
func (s *InstrumentedStore) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (s *InstrumentedStore) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, n := range s.requests {
		send(ch, s.fRequests, float64(n), k[:]...)
	}
	for _, h := range []struct {
		f      *family
		m      map[[2]string]*histogramSeries
		bounds []float64
	}{{s.fLatency, s.latency, restLatencyBuckets}, {s.fLimiter, s.limiter, rateLimiterBuckets}} {
		for _, series := range h.m {
			buckets := make(map[float64]uint64, len(h.bounds))
			var cum uint64
			for i, ub := range h.bounds {
				cum += series.perBucket[i]
				buckets[ub] = cum
			}
			sendMetric(ch, constHist(h.f, series.count, series.sum, buckets, series.labels...))
		}
	}
	for ns, n := range s.created {
		send(ch, s.fCreated, float64(n), ns)
	}
}
