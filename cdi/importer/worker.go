package importer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/utils/clock"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi/storage"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// WorkerOptions configure a Worker. NodeName, Store, Importer and Classes
// are required.
type WorkerOptions struct {
	// NodeName is this node: the worker fills the DataVolumes scheduled
	// on it (virtkit.DataVolumeImportNodeAnnotation).
	NodeName string
	Store    store.Store
	Importer *Importer
	// Classes are the storage classes this node provides.
	Classes storage.Classes
	// MaxRetries is how many failed attempts a transient failure gets
	// before the DataVolume fails; 0 means 5.
	MaxRetries int32
	// Backoff is the wait before attempt n+1 (n >= 1 failed attempts);
	// nil doubles from 1 s up to 1 min.
	Backoff func(restarts int32) time.Duration
	// ProgressInterval is how often status.progress is written while an
	// import runs; 0 means 1 s.
	ProgressInterval time.Duration
	// Clock; nil is the real clock.
	Clock clock.WithTicker
	// Logger; nil discards.
	Logger *slog.Logger
	// Events records Kubernetes-style events; nil records none.
	Events events.EventRecorder
}

// Worker is the per-node import worker: a reconcile.Reconciler over
// DataVolumes.
type Worker struct {
	opts WorkerOptions
	log  *slog.Logger
	// uploads holds the namespace/name of the uploads running.
	uploads sync.Map
}

var _ reconcile.Reconciler = (*Worker)(nil)

// errInvalidOptions wraps every configuration error of this package; it
// matches virtkit.ErrInvalidOptions.
var errInvalidOptions = virtkit.InvalidOptions("import worker")

// NewWorker validates opts.
func NewWorker(opts WorkerOptions) (*Worker, error) {
	switch {
	case opts.NodeName == "":
		return nil, fmt.Errorf("%w: NodeName: required", errInvalidOptions)
	case opts.Store == nil:
		return nil, fmt.Errorf("%w: Store: required", errInvalidOptions)
	case opts.Importer == nil:
		return nil, fmt.Errorf("%w: Importer: required", errInvalidOptions)
	case len(opts.Classes.List) == 0:
		return nil, fmt.Errorf("%w: Classes: at least one storage class", errInvalidOptions)
	}
	if opts.MaxRetries <= 0 {
		opts.MaxRetries = 5
	}
	if opts.Backoff == nil {
		opts.Backoff = func(n int32) time.Duration {
			return min(time.Minute, time.Second*time.Duration(math.Pow(2, float64(max(n-1, 0)))))
		}
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Worker{opts: opts, log: log.With("node", opts.NodeName)}, nil
}

// Watches feeds the worker the DataVolumes scheduled on its node.
func (w *Worker) Watches() []reconcile.Watch {
	return []reconcile.Watch{{
		NewList: func() virtkit.ObjectList { return &virtkit.DataVolumeList{} },
		Map: func(ctx context.Context, obj virtkit.Object) []reconcile.Request {
			if obj.GetAnnotations()[virtkit.DataVolumeImportNodeAnnotation] != w.opts.NodeName {
				return nil
			}
			return reconcile.ObjectKey(ctx, obj)
		},
	}}
}

func (w *Worker) now() metav1.Time { return metav1.NewTime(w.opts.Clock.Now()) }

func active(p virtkit.DataVolumePhase) bool {
	switch p {
	case virtkit.DataVolumeImportScheduled, virtkit.DataVolumeImportInProgress,
		virtkit.DataVolumeCloneScheduled, virtkit.DataVolumeCloneInProgress,
		virtkit.DataVolumeCloneFromSnapshotSourceInProgress:
		return true
	}
	return false
}

// Reconcile implements reconcile.Reconciler.
func (w *Worker) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	dv := &virtkit.DataVolume{}
	err := w.opts.Store.Get(ctx, store.Key{Namespace: req.Namespace, Name: req.Name}, dv)
	if errors.Is(err, store.ErrNotFound) {
		// Deleted: its disk goes with it (only this node's worker was
		// told, as the node that filled it).
		return reconcile.Result{}, w.Remove(req.Namespace, req.Name)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if dv.DeletionTimestamp != nil || dv.Annotations[virtkit.DataVolumeImportNodeAnnotation] != w.opts.NodeName || !active(dv.Status.Phase) {
		return reconcile.Result{}, nil
	}
	class, err := w.opts.Classes.ForDataVolume(&dv.Spec)
	if err != nil {
		return reconcile.Result{}, w.fail(ctx, dv, err)
	}
	ireq, err := w.request(ctx, dv, class)
	if errors.Is(err, ErrSourceConfigMissing) {
		return w.waitForConfig(ctx, dv, err)
	}
	if err != nil {
		return reconcile.Result{}, w.fail(ctx, dv, err)
	}
	inProgress := virtkit.DataVolumeImportInProgress
	switch {
	case dv.Spec.Source.PVC != nil:
		inProgress = virtkit.DataVolumeCloneInProgress
	case dv.Spec.Source.Snapshot != nil:
		inProgress = virtkit.DataVolumeCloneFromSnapshotSourceInProgress
	}
	now := w.now()
	dv.Status.Phase = inProgress
	if dv.Status.Progress == "" || dv.Status.Progress == virtkit.ProgressNotAvailable {
		dv.Status.Progress = virtkit.FormatDataVolumeProgress(0)
	}
	dv.Status.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeRunning, Status: virtkit.ConditionTrue,
		Reason: virtkit.DataVolumeReasonImportRunning}, now)
	dv.Status.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeReady, Status: virtkit.ConditionFalse,
		Reason: virtkit.DataVolumeReasonTransferRunning, Message: "Import in progress"}, now)
	if err := w.opts.Store.UpdateStatus(ctx, dv); err != nil {
		return reconcile.Result{}, err
	}
	w.log.InfoContext(ctx, "importing", "datavolume", req.String(), "target", ireq.Target)

	res, err := w.run(ctx, req, ireq)
	if err != nil {
		if ctx.Err() != nil {
			return reconcile.Result{}, ctx.Err()
		}
		return w.retryOrFail(ctx, req, err)
	}
	return reconcile.Result{}, w.succeed(ctx, req, class, res)
}

// request turns a DataVolume into an import request.
func (w *Worker) request(ctx context.Context, dv *virtkit.DataVolume, class storage.Class) (Request, error) {
	size, _ := virtkit.DataVolumeSize(&dv.Spec)
	r := Request{Target: class.Path(w.opts.NodeName, dv.Namespace, dv.Name), Size: size, Key: scratchKey(dv)}
	src := dv.Spec.Source
	switch {
	case src == nil:
		return r, public(fmt.Errorf("%w: spec.source is required", ErrBadSource), "spec.source is required")
	case src.HTTP != nil:
		r.HTTP = &HTTPSource{URL: src.HTTP.URL, Headers: src.HTTP.ExtraHeaders, Checksum: src.HTTP.Checksum}
	case src.S3 != nil:
		s3, err := w.s3Source(ctx, dv)
		if err != nil {
			return r, err
		}
		r.S3 = s3
	case src.Registry != nil && src.Registry.URL != nil:
		r.Registry = &RegistrySource{Image: *src.Registry.URL}
		if pl := src.Registry.Platform; pl != nil {
			r.Registry.Architecture = pl.Architecture
		}
	case src.Blank != nil:
		r.Blank = true
	case src.PVC != nil:
		ns := src.PVC.Namespace
		if ns == "" {
			ns = dv.Namespace
		}
		p, err := w.clonePath(ctx, ns, src.PVC.Name)
		if err != nil {
			return r, err
		}
		r.ClonePath = p
	case src.Snapshot != nil:
		p, err := w.volumeSnapshotPath(ctx, dv)
		if err != nil {
			return r, err
		}
		r.ClonePath = p
	default:
		return r, public(fmt.Errorf("%w: spec.source: no source virtkit imports", ErrBadSource), "spec.source: no source virtkit imports")
	}
	return r, nil
}

// clonePath finds the disk of claim ns/name: a succeeded DataVolume's.
func (w *Worker) clonePath(ctx context.Context, ns, name string) (string, error) {
	src := &virtkit.DataVolume{}
	if err := w.opts.Store.Get(ctx, store.Key{Namespace: ns, Name: name}, src); err != nil {
		err = fmt.Errorf("clone source %s/%s: %w", ns, name, err)
		if errors.Is(err, store.ErrNotFound) {
			return "", public(err, "clone source %s/%s: not found", ns, name)
		}
		return "", err
	}
	if src.Status.Phase != virtkit.DataVolumeSucceeded {
		err := fmt.Errorf("clone source %s/%s is in phase %q", ns, name, src.Status.Phase)
		return "", public(err, "%s", err.Error())
	}
	class, err := w.opts.Classes.Get(src.Annotations[virtkit.DataVolumeStorageClassAnnotation])
	if err != nil {
		return "", err
	}
	if n := src.Annotations[virtkit.DataVolumeVolumeNodeAnnotation]; n != "" && n != w.opts.NodeName {
		err := fmt.Errorf("clone source %s/%s lives on node %s, not %s", ns, name, n, w.opts.NodeName)
		return "", public(err, "clone source %s/%s lives on another node", ns, name)
	}
	return class.Path(w.opts.NodeName, ns, name), nil
}

// run imports while writing progress every ProgressInterval.
func (w *Worker) run(ctx context.Context, req reconcile.Request, ireq Request) (Result, error) {
	var mu sync.Mutex
	pct, written := 0.0, -1.0
	ireq.Progress = func(p float64) { mu.Lock(); pct = p; mu.Unlock() }
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := w.opts.Clock.NewTicker(w.opts.ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C():
			}
			mu.Lock()
			p := pct
			mu.Unlock()
			if p == written || p >= 100 {
				continue
			}
			if w.writeProgress(ctx, req, p) == nil {
				written = p
			}
		}
	}()
	res, err := w.opts.Importer.Import(ctx, ireq)
	close(done)
	wg.Wait()
	return res, err
}

func (w *Worker) writeProgress(ctx context.Context, req reconcile.Request, p float64) error {
	dv := &virtkit.DataVolume{}
	if err := w.opts.Store.Get(ctx, store.Key{Namespace: req.Namespace, Name: req.Name}, dv); err != nil {
		return err
	}
	dv.Status.Progress = virtkit.FormatDataVolumeProgress(p)
	return w.opts.Store.UpdateStatus(ctx, dv)
}

func (w *Worker) succeed(ctx context.Context, req reconcile.Request, class storage.Class, res Result) error {
	dv := &virtkit.DataVolume{}
	if err := w.opts.Store.Get(ctx, store.Key{Namespace: req.Namespace, Name: req.Name}, dv); err != nil {
		return err
	}
	if dv.Annotations == nil {
		dv.Annotations = map[string]string{}
	}
	dv.Annotations[virtkit.DataVolumeStorageClassAnnotation] = class.Name()
	if class.Shared() {
		delete(dv.Annotations, virtkit.DataVolumeVolumeNodeAnnotation)
	} else {
		dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation] = w.opts.NodeName
	}
	if err := w.opts.Store.Update(ctx, dv); err != nil {
		return err
	}
	now := w.now()
	st := &dv.Status
	st.Phase = virtkit.DataVolumeSucceeded
	st.Progress = virtkit.FormatDataVolumeProgress(100)
	st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeBound, Status: virtkit.ConditionTrue,
		Reason: virtkit.DataVolumeReasonBound, Message: "PVC " + dv.Name + " Bound"}, now)
	st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeRunning, Status: virtkit.ConditionFalse,
		Reason: virtkit.DataVolumeReasonCompleted, Message: "Import Complete"}, now)
	st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeReady, Status: virtkit.ConditionTrue}, now)
	if err := w.opts.Store.UpdateStatus(ctx, dv); err != nil {
		return err
	}
	w.log.InfoContext(ctx, "import succeeded", "datavolume", req.String(), "format", res.SourceFormat, "bytes", res.Size)
	if dv.Spec.Source != nil && dv.Spec.Source.Upload != nil {
		events.RecordEvent(ctx, w.opts.Events, dv, virtkit.EventTypeNormal, "UploadSucceeded", "Upload", "Successfully uploaded into PVC %s", dv.Name)
		return nil
	}
	events.RecordEvent(ctx, w.opts.Events, dv, virtkit.EventTypeNormal, "ImportSucceeded", "Import", "Successfully imported into PVC %s", dv.Name)
	return nil
}

// retryOrFail counts a failed attempt; a permanent error or the last
// allowed attempt fails the DataVolume.
func (w *Worker) retryOrFail(ctx context.Context, req reconcile.Request, cause error) (reconcile.Result, error) {
	dv := &virtkit.DataVolume{}
	if err := w.opts.Store.Get(ctx, store.Key{Namespace: req.Namespace, Name: req.Name}, dv); err != nil {
		return reconcile.Result{}, err
	}
	if Permanent(cause) || dv.Status.RestartCount+1 >= w.opts.MaxRetries {
		return reconcile.Result{}, w.fail(ctx, dv, cause)
	}
	dv.Status.RestartCount++
	dv.Status.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeRunning, Status: virtkit.ConditionFalse,
		Reason: virtkit.DataVolumeReasonError, Message: TenantMessage(cause)}, w.now())
	if err := w.opts.Store.UpdateStatus(ctx, dv); err != nil {
		return reconcile.Result{}, err
	}
	wait := w.opts.Backoff(dv.Status.RestartCount)
	w.log.WarnContext(ctx, "import failed, retrying", "datavolume", req.String(), "restarts", dv.Status.RestartCount, "in", wait, "err", cause)
	events.RecordEvent(ctx, w.opts.Events, dv, virtkit.EventTypeWarning, virtkit.DataVolumeReasonError, "Import", "Unable to import: %s", TenantMessage(cause))
	return reconcile.Result{RequeueAfter: wait}, nil
}

// scratchKey names a DataVolume's scratch space: namespace, name and UID
// joined by "_", which neither a namespace nor a name holds, so the
// scratch spaces of one namespace/name share an unambiguous prefix.
func scratchKey(dv *virtkit.DataVolume) string {
	return scratchPrefix(dv.Namespace, dv.Name) + string(dv.UID)
}

func scratchPrefix(namespace, name string) string { return namespace + "_" + name + "_" }

// fail marks the DataVolume Failed with the cause and removes its scratch
// space.
func (w *Worker) fail(ctx context.Context, dv *virtkit.DataVolume, cause error) error {
	if err := w.opts.Importer.RemoveScratch(scratchKey(dv)); err != nil {
		w.log.WarnContext(ctx, "removing import scratch space", "datavolume", dv.Namespace+"/"+dv.Name, "err", err)
	}
	now := w.now()
	st := &dv.Status
	st.Phase = virtkit.DataVolumeFailed
	st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeRunning, Status: virtkit.ConditionFalse,
		Reason: virtkit.DataVolumeReasonError, Message: TenantMessage(cause)}, now)
	st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeReady, Status: virtkit.ConditionFalse,
		Reason: virtkit.DataVolumeReasonTransferFailed, Message: TenantMessage(cause)}, now)
	if err := w.opts.Store.UpdateStatus(ctx, dv); err != nil {
		return err
	}
	w.log.WarnContext(ctx, "import failed", "datavolume", dv.Namespace+"/"+dv.Name, "err", cause)
	events.RecordEvent(ctx, w.opts.Events, dv, virtkit.EventTypeWarning, virtkit.DataVolumeReasonTransferFailed, "Import", "Import failed: %s", TenantMessage(cause))
	return nil
}

// Remove deletes the disk of a DataVolume from every class of this node,
// and the scratch space of its imports (for callers that garbage-collect
// deleted DataVolumes).
func (w *Worker) Remove(namespace, name string) error {
	var errs []error
	m, err := filepath.Glob(filepath.Join(w.opts.Importer.opts.ScratchDir, storage.Sanitize(scratchPrefix(namespace, name))+"*"))
	if err != nil {
		errs = append(errs, err)
	}
	for _, d := range m {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range w.opts.Classes.List {
		if err := os.Remove(c.Path(w.opts.NodeName, namespace, name)); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
