package corev1

import (
	"context"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// view is a read-only resource whose objects are derived from objects of
// another kind in the store (core Nodes from virtkit Nodes, claims from
// DataVolumes, core Events from events.k8s.io Events). It serves get,
// list and watch with label and field selectors evaluated on the derived
// objects; resourceVersions are the store's.
type view struct {
	st                 store.Store
	resource, singular string
	shortNames         []string
	namespaced         bool
	newObj, newList    func() runtime.Object
	// source are the objects the view derives from.
	newSource     func() virtkit.Object
	newSourceList func() virtkit.ObjectList
	// convert derives the view of one source object.
	convert func(virtkit.Object) runtime.Object
	// expand, when set, is used instead of convert for a kind that
	// derives any number of objects from one source object (pods: none,
	// one or two per VMI).
	expand func(virtkit.Object) []runtime.Object
	// fields are the selectable fields besides metadata.name/namespace.
	fields func(runtime.Object) fields.Set
	// history, when set, gives a watch resumed from a resourceVersion
	// what each source object derived at that version (see needsHistory).
	// It starts with the view's first list or watch that needs it, so a
	// watch resumed from the version of such a list (an informer's) can
	// be answered; it holds the objects derived from every source object,
	// as kube-apiserver's watch cache holds every object.
	history *history
	rest.TableConvertor
}

var (
	_ rest.Getter               = (*view)(nil)
	_ rest.Lister               = (*view)(nil)
	_ rest.Watcher              = (*view)(nil)
	_ rest.Scoper               = (*view)(nil)
	_ rest.SingularNameProvider = (*view)(nil)
	_ rest.ShortNamesProvider   = (*view)(nil)
)

func (v *view) groupResource() schema.GroupResource {
	return schema.GroupResource{Resource: v.resource}
}

// New implements rest.Storage.
func (v *view) New() runtime.Object { return v.newObj() }

// Destroy implements rest.Storage: it stops the view's history; the
// store belongs to the caller.
func (v *view) Destroy() {
	if v.history != nil {
		v.history.stop()
	}
}

// withHistory gives v a history over st.
func (v *view) withHistory(st store.Store) *view {
	v.history = newHistory(st, v)
	return v
}

// ensureHistory starts the view's history if it has one.
func (v *view) ensureHistory(ctx context.Context) error {
	if v.history == nil {
		return nil
	}
	if err := v.history.ensure(ctx); err != nil {
		return apiError(err, v.groupResource(), "")
	}
	return nil
}

// NamespaceScoped implements rest.Scoper.
func (v *view) NamespaceScoped() bool { return v.namespaced }

// GetSingularName implements rest.SingularNameProvider.
func (v *view) GetSingularName() string { return v.singular }

// ShortNames implements rest.ShortNamesProvider.
func (v *view) ShortNames() []string { return v.shortNames }

// NewList implements rest.Lister.
func (v *view) NewList() runtime.Object { return v.newList() }

func (v *view) namespace(ctx context.Context) string {
	if !v.namespaced {
		return ""
	}
	return genericapirequest.NamespaceValue(ctx)
}

// Get implements rest.Getter.
func (v *view) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	src := v.newSource()
	if err := v.st.Get(ctx, store.Key{Namespace: v.namespace(ctx), Name: name}, src); err != nil {
		return nil, apiError(err, v.groupResource(), name)
	}
	return v.convert(src), nil
}

// needsHistory says whether a watch of v with m resumed from a
// resourceVersion must learn from the history what the client holds (and
// a list with m starts the history, for the watch an informer resumes
// from it): it must when a source object derives any number of objects
// (pods), or when the watch selects (an object changed since may have
// matched then and not now, or the other way round). A client of a view
// deriving one object per source object that selects nothing holds at
// the version exactly the objects whose sources exist then: the store's
// events say all its watch must.
func (v *view) needsHistory(m matcher) bool {
	if v.history == nil {
		return false
	}
	return v.expand != nil || !m.label.Empty() || !m.field.Empty()
}

// derive returns the objects derived from src.
func (v *view) derive(src virtkit.Object) []runtime.Object {
	if v.expand != nil {
		return v.expand(src)
	}
	return []runtime.Object{v.convert(src)}
}

// matcher selects derived objects by labels and fields.
type matcher struct {
	label labels.Selector
	field fields.Selector
	view  *view
}

func (v *view) matcher(options *metainternalversion.ListOptions) matcher {
	m := matcher{label: labels.Everything(), field: fields.Everything(), view: v}
	if options != nil && options.LabelSelector != nil {
		m.label = options.LabelSelector
	}
	if options != nil && options.FieldSelector != nil {
		m.field = options.FieldSelector
	}
	return m
}

func (m matcher) matches(obj runtime.Object) bool {
	l, f, err := objectAttrs(obj, m.view.namespaced, m.view.fields)
	return err == nil && m.label.Matches(l) && m.field.Matches(f)
}

// list lists the derived objects that match, and the store's version.
func (v *view) list(ctx context.Context, m matcher) ([]runtime.Object, string, error) {
	src := v.newSourceList()
	if err := v.st.List(ctx, src, store.ListOptions{Namespace: v.namespace(ctx)}); err != nil {
		return nil, "", apiError(err, v.groupResource(), "")
	}
	items, err := meta.ExtractList(src)
	if err != nil {
		return nil, "", apierrors.NewInternalError(err)
	}
	var out []runtime.Object
	for _, item := range items {
		o, ok := item.(virtkit.Object)
		if !ok {
			continue
		}
		for _, obj := range v.derive(o) {
			if m.matches(obj) {
				out = append(out, obj)
			}
		}
	}
	return out, src.GetResourceVersion(), nil
}

// List implements rest.Lister. The whole list is one page.
func (v *view) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	m := v.matcher(options)
	if v.needsHistory(m) {
		if err := v.ensureHistory(ctx); err != nil {
			return nil, err
		}
	}
	items, rv, err := v.list(ctx, m)
	if err != nil {
		return nil, err
	}
	l := v.newList()
	if err := meta.SetList(l, items); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	la, err := meta.ListAccessor(l)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	la.SetResourceVersion(rv)
	return l, nil
}

// Watch implements rest.Watcher. Without a resourceVersion (or with "0")
// it starts with an Added event per matching object, as kube-apiserver
// does; with sendInitialEvents it ends them with the bookmark client-go's
// watch-list waits for. A watch from a resourceVersion (an informer's,
// after its list) reports every change since as a watch of stored
// objects does: an object the client holds that is not derived any more,
// or stopped matching the selector, is Deleted, one that started matching
// is Added; or, when the view's history does not reach back that far, the
// watch ends with 410 Gone and the client relists.
func (v *view) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	if options == nil {
		options = &metainternalversion.ListOptions{}
	}
	m := v.matcher(options)
	if v.needsHistory(m) {
		if err := v.ensureHistory(ctx); err != nil {
			return nil, err
		}
	}
	rv := options.ResourceVersion
	initial := rv == "" || rv == "0"
	if options.SendInitialEvents != nil {
		initial = *options.SendInitialEvents
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &viewWatch{ch: make(chan watch.Event), cancel: cancel, matched: map[string]bool{}}
	if v.expand != nil {
		w.derived = map[string]map[string]runtime.Object{}
	}
	if !initial && v.needsHistory(m) {
		w.seen = map[string]bool{}
	}
	var first []runtime.Object
	if initial {
		items, listRV, err := v.list(ctx, m)
		if err != nil {
			cancel()
			return nil, err
		}
		first, rv = items, listRV
	} else if rv == "0" {
		rv = ""
	}
	events, err := v.st.Watch(ctx, v.newSourceList(), store.WatchOptions{Namespace: v.namespace(ctx), ResourceVersion: rv, ReadOnly: true})
	if err != nil {
		cancel()
		return nil, apiError(err, v.groupResource(), "")
	}
	bookmark := options.SendInitialEvents != nil && *options.SendInitialEvents && options.AllowWatchBookmarks
	go w.run(ctx, v, m, initial, first, rv, bookmark, events)
	return w, nil
}

// viewWatch is the watch.Interface of a view.
type viewWatch struct {
	ch      chan watch.Event
	cancel  context.CancelFunc
	once    sync.Once
	matched map[string]bool // keys of the objects the client holds (true) or known not to (false)
	// derived holds, for a view that derives several objects from one
	// source, the objects last sent of each source object (by key), so
	// an object the source no longer derives is reported deleted.
	derived map[string]map[string]runtime.Object
	// seen holds, for a watch resumed from a version with the view's
	// history, the source objects whose state at that version it has
	// learnt from the history (on their first change).
	seen map[string]bool
}

// ResultChan implements watch.Interface.
func (w *viewWatch) ResultChan() <-chan watch.Event { return w.ch }

// Stop implements watch.Interface.
func (w *viewWatch) Stop() { w.once.Do(w.cancel) }

func (w *viewWatch) send(ctx context.Context, e watch.Event) bool {
	select {
	case w.ch <- e:
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *viewWatch) run(ctx context.Context, v *view, m matcher, complete bool, first []runtime.Object, rv string, bookmark bool, events <-chan store.Event) {
	defer close(w.ch)
	defer w.Stop()
	// complete: with initial events the client holds exactly what was sent.
	for _, obj := range first {
		w.matched[key(obj)] = true
		w.sent(obj)
		if !w.send(ctx, watch.Event{Type: watch.Added, Object: obj}) {
			return
		}
	}
	if bookmark {
		b := v.newObj()
		if a, err := meta.Accessor(b); err == nil {
			a.SetResourceVersion(rv)
			a.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
		if !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: b}) {
			return
		}
	}
	for e := range events {
		if e.Type == store.Error {
			w.send(ctx, watch.Event{Type: watch.Error, Object: statusOf(apiError(e.Err, v.groupResource(), ""))})
			return
		}
		objs := v.derive(e.Object)
		if !w.seed(ctx, v, m, e.Object, objs) || !w.gone(ctx, e.Object, objs) {
			return
		}
		for _, obj := range objs {
			if !w.event(ctx, m, complete, e.Type, obj) {
				return
			}
		}
	}
}

// seed learns, on the first change of src a resumed watch sees, what src
// derived at the version the watch resumed from (what the client holds
// of it) from the view's history: those objects count as sent and
// matched as they matched then; objects src derives now but did not
// then are known not to be held. false when the watch ended (the history
// does not reach back far enough: the client is told to relist with 410
// Gone).
func (w *viewWatch) seed(ctx context.Context, v *view, m matcher, src virtkit.Object, objs []runtime.Object) bool {
	sk := src.GetNamespace() + "/" + src.GetName()
	if w.seen == nil || w.seen[sk] {
		return true
	}
	rv, err := strconv.ParseUint(src.GetResourceVersion(), 10, 64)
	if err != nil {
		w.send(ctx, watch.Event{Type: watch.Error, Object: statusOf(apierrors.NewInternalError(err))})
		return false
	}
	before, err := v.history.before(ctx, sk, rv)
	if err != nil {
		w.send(ctx, watch.Event{Type: watch.Error, Object: statusOf(apiError(err, v.groupResource(), ""))})
		return false
	}
	w.seen[sk] = true
	for _, o := range before {
		w.sent(o)
		w.matched[key(o)] = m.matches(o)
	}
	for _, o := range objs {
		if _, ok := w.matched[key(o)]; !ok {
			w.matched[key(o)] = false
		}
	}
	return true
}

// event sends what the client must learn of obj, derived from a source
// object's event of type et; false when the watch ended.
func (w *viewWatch) event(ctx context.Context, m matcher, complete bool, et store.EventType, obj runtime.Object) bool {
	k := key(obj)
	now := et != store.Deleted && m.matches(obj)
	was, known := w.matched[k]
	if !known && !complete {
		// A watch from a resourceVersion: what the client holds is
		// unknown; an object changed or deleted that matches is
		// taken to have matched before.
		was = et != store.Added && m.matches(obj)
	}
	var t watch.EventType
	switch {
	case now && was:
		t = watch.Modified
	case now:
		t = watch.Added
	case was:
		t = watch.Deleted
	default:
		return true
	}
	switch {
	case now:
		w.matched[k] = true
	case complete:
		delete(w.matched, k)
	default:
		w.matched[k] = false
	}
	return w.send(ctx, watch.Event{Type: t, Object: obj})
}

// sent records obj as derived from its source (views with expand only).
func (w *viewWatch) sent(obj runtime.Object) {
	if w.derived == nil {
		return
	}
	src := sourceKey(obj)
	if w.derived[src] == nil {
		w.derived[src] = map[string]runtime.Object{}
	}
	w.derived[src][key(obj)] = obj
}

// sourceKey is the key of the source object obj derives from: its
// controller's (a launcher pod's VMI).
func sourceKey(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		return m.GetNamespace() + "/" + ref.Name
	}
	return key(obj)
}

// gone reports deleted the objects the client holds that src no longer
// derives (a migration's target pod once the migration ended), and
// records objs as src's; false when the watch ended.
func (w *viewWatch) gone(ctx context.Context, src virtkit.Object, objs []runtime.Object) bool {
	if w.derived == nil {
		return true
	}
	sk := src.GetNamespace() + "/" + src.GetName()
	now := map[string]runtime.Object{}
	for _, o := range objs {
		now[key(o)] = o
	}
	for k, old := range w.derived[sk] {
		if _, ok := now[k]; ok || !w.matched[k] {
			continue
		}
		delete(w.matched, k)
		if !w.send(ctx, watch.Event{Type: watch.Deleted, Object: old}) {
			return false
		}
	}
	if len(now) == 0 {
		delete(w.derived, sk)
	} else {
		w.derived[sk] = now
	}
	return true
}

func key(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetNamespace() + "/" + m.GetName()
}

func statusOf(err error) *metav1.Status {
	if s, ok := err.(apierrors.APIStatus); ok {
		st := s.Status()
		return &st
	}
	return &metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
}
