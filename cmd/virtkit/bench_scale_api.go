package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// BackendAPI is the ScaleResult.Backend of a run through the API.
const backendAPI = "memory+api"

var (
	vmResource  = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	vmiResource = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
)

// measureScaleAPI is the run of cluster.MeasureScale with the clients on
// the other side of the API: the same embedded cluster (memory store,
// simulated hosts, the same controllers and node agents) serves the API
// as `virtkit controller` does (Kubernetes' generic API server with its
// watch cache, RBAC, TLS on a loopback port), and client-go creates the VMs
// (at most o.CreateConcurrency at a time, no client-side rate limit) and
// watches their VMIs to Running through it. CPU is the whole process's:
// cluster, API server and client.
func measureScaleAPI(ctx context.Context, o cluster.ScaleOptions) (cluster.ScaleResult, error) {
	if o.CreateConcurrency <= 0 {
		o.CreateConcurrency = 16
	}
	mem, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1})
	if err != nil {
		return cluster.ScaleResult{}, err
	}
	copts := cluster.Options{Store: mem, Nodes: o.Nodes, Workers: o.Workers,
		NodeAgent:     node.Options{Workers: o.Workers, StatusInterval: time.Minute, HeartbeatInterval: 10 * time.Second},
		NewHypervisor: benchScaleHosts(o.VMs/o.Nodes + 1)}
	c, err := cluster.New(copts)
	if err != nil {
		return cluster.ScaleResult{}, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Start(runCtx) }()
	defer func() { stop(); wg.Wait() }()
	if err := c.WaitNodesReady(ctx); err != nil {
		return cluster.ScaleResult{}, err
	}

	cfg, err := serveBenchAPI(runCtx, &wg, mem, copts.ObjectDefaults())
	if err != nil {
		return cluster.ScaleResult{}, err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return cluster.ScaleResult{}, err
	}
	_, err = kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scale"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return cluster.ScaleResult{}, fmt.Errorf("namespace scale: %w", err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return cluster.ScaleResult{}, err
	}

	names := make([]string, o.VMs)
	for i := range names {
		names[i] = fmt.Sprintf("vm-%05d", i)
	}
	cpu0 := benchProcessCPU()
	lat, total, err := apiCreateToRunning(ctx, dc, names, o.CreateConcurrency)
	cpu := benchProcessCPU() - cpu0
	if err != nil {
		return cluster.ScaleResult{}, err
	}
	var reconciles uint64
	for _, ctrl := range c.Controllers() {
		reconciles += ctrl.Stats().Reconciles
	}
	for _, n := range c.Nodes() {
		reconciles += n.Agent.Controller().Stats().Reconciles
	}
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	return cluster.ScaleResult{
		VMs: o.VMs, Nodes: o.Nodes, Total: total,
		Throughput: float64(o.VMs) / total.Seconds(),
		P50:        pct(0.50), P90: pct(0.90), P99: pct(0.99), Max: lat[len(lat)-1],
		Reconciles: reconciles, ReconcilesPerSec: float64(reconciles) / total.Seconds(),
		ReconcilesPerVM: float64(reconciles) / float64(o.VMs),
		CPU:             cpu, CPUPerVM: cpu / time.Duration(o.VMs),
		Backend: backendAPI,
	}, nil
}

// serveBenchAPI serves the API over st on a loopback port until ctx ends
// (wg waits for it) and returns an admin client configuration for it.
func serveBenchAPI(ctx context.Context, wg *sync.WaitGroup, st *store.Memory, defaults virtkit.DefaultOptions) (*rest.Config, error) {
	dir, err := os.MkdirTemp("", "virtkit-bench-api-")
	if err != nil {
		return nil, err
	}
	certs, err := apiserver.EnsureCertificates(dir, nil)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	srv, err := apiserver.NewGeneric(apiserver.GenericOptions{
		Store: st, Defaults: defaults,
		Authenticator: apiserver.Authenticators{apiserver.ClientCertAuthenticator{}},
		WatchCache:    true,
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer os.RemoveAll(dir)
		_ = srv.Serve(ctx, ln, certs.ServerTLSConfig())
	}()
	if err := srv.Start(ctx); err != nil {
		return nil, err
	}
	return &rest.Config{Host: "https://" + ln.Addr().String(), QPS: -1, TLSClientConfig: rest.TLSClientConfig{
		CAData: certs.CAPEM, CertData: certs.AdminCert, KeyData: certs.AdminKey,
	}}, nil
}

// apiCreateToRunning creates a VM (cluster.ScaleVM) per name through the
// API, at most concurrency at a time, and measures for each the time from
// just before its create call to the first event of a watch through the
// API showing its VMI Running. A watch the server ends is resumed from the
// last resourceVersion seen, as client-go's informers do. It returns the
// latencies, sorted, and the time from the first create to the last
// Running.
func apiCreateToRunning(ctx context.Context, dc dynamic.Interface, names []string, concurrency int) ([]time.Duration, time.Duration, error) {
	n := len(names)
	vmis := dc.Resource(vmiResource).Namespace("scale")
	list, err := vmis.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, fmt.Errorf("list VMIs: %w", err)
	}
	wctx, cancelWatch := context.WithCancel(ctx)
	defer cancelWatch()
	w, err := vmis.Watch(wctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion(), AllowWatchBookmarks: true})
	if err != nil {
		return nil, 0, fmt.Errorf("watch VMIs: %w", err)
	}

	var mu sync.Mutex
	created := make(map[string]time.Time, n)
	running := make(map[string]time.Duration, n)
	allRunning := make(chan struct{})
	watchErr := make(chan error, 1)
	go func() {
		defer func() { w.Stop() }()
		last := list.GetResourceVersion()
		for {
			ev, ok := <-w.ResultChan()
			if !ok {
				if wctx.Err() != nil {
					return
				}
				var err error
				if w, err = vmis.Watch(wctx, metav1.ListOptions{ResourceVersion: last, AllowWatchBookmarks: true}); err != nil {
					watchErr <- fmt.Errorf("watch VMIs again from %s: %w", last, err)
					return
				}
				continue
			}
			if ev.Type == watch.Error {
				watchErr <- fmt.Errorf("watch VMIs: %v", apierrors.FromObject(ev.Object))
				return
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			last = u.GetResourceVersion()
			if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase != string(virtkit.Running) {
				continue
			}
			now := time.Now()
			mu.Lock()
			if t0, ok := created[u.GetName()]; ok {
				if _, seen := running[u.GetName()]; !seen {
					running[u.GetName()] = now.Sub(t0)
					if len(running) == n {
						close(allRunning)
					}
				}
			}
			mu.Unlock()
		}
	}()

	vms := dc.Resource(vmResource).Namespace("scale")
	start := time.Now()
	sem := make(chan struct{}, max(1, concurrency))
	createErr := make(chan error, 1)
	var wg sync.WaitGroup
	for _, name := range names {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return nil, 0, ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cluster.ScaleVM(name))
			if err == nil {
				mu.Lock()
				created[name] = time.Now()
				mu.Unlock()
				_, err = vms.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
			}
			if err != nil {
				select {
				case createErr <- fmt.Errorf("create %s: %w", name, err):
				default:
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-createErr:
		return nil, 0, err
	default:
	}
	select {
	case <-allRunning:
	case err := <-watchErr:
		return nil, 0, err
	case <-ctx.Done():
		mu.Lock()
		got := len(running)
		mu.Unlock()
		return nil, 0, fmt.Errorf("%d of %d VMIs Running: %w", got, n, context.Cause(ctx))
	}
	total := time.Since(start)
	mu.Lock()
	lat := make([]time.Duration, 0, n)
	for _, d := range running {
		lat = append(lat, d)
	}
	mu.Unlock()
	slices.Sort(lat)
	if len(lat) == 0 {
		return nil, 0, errors.New("no VMI reached Running")
	}
	return lat, total, nil
}

// benchScaleHosts makes simulated hosts big enough for perHost small
// guests, as cluster.MeasureScale's are.
func benchScaleHosts(perHost int) func(string) (hypervisor.Hypervisor, error) {
	return func(name string) (hypervisor.Hypervisor, error) {
		return sim.New(sim.Options{Name: name, CPUs: max(8, perHost), MemoryBytes: uint64(max(8, perHost)) * 128 << 20}), nil
	}
}
