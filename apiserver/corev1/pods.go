package corev1

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// podREST serves pods as an always empty, read-only resource: virtkit runs
// guests without pods (no virt-launcher). It exists so clients that look
// for pods find none rather than an unknown resource: kubectl drain lists
// the pods of the node it drains and, finding none, completes after the
// cordon. Evacuating a node's VMIs is virtkit's drain (controller.Drain),
// not a pod eviction.
type podREST struct {
	*view
}

func newPodREST(st store.Store, clk clock.PassiveClock) *podREST {
	return &podREST{view: &view{
		st: st, resource: "pods", singular: "pod", shortNames: []string{"po"}, namespaced: true,
		newObj:  func() runtime.Object { return &corev1.Pod{} },
		newList: func() runtime.Object { return &corev1.PodList{} },
		// The list's version comes from a list of Nodes, which is
		// cheap and always allowed.
		newSource:      func() virtkit.Object { return &virtkit.Node{} },
		newSourceList:  func() virtkit.ObjectList { return &virtkit.NodeList{} },
		convert:        func(virtkit.Object) runtime.Object { return nil },
		TableConvertor: table{clock: clk, columns: []column{nameColumn(), ageColumn()}},
	}}
}

// Get implements rest.Getter: there are no pods.
func (r *podREST) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	return nil, apiError(store.ErrNotFound, r.groupResource(), name)
}

// List implements rest.Lister: an empty list at the store's version.
func (r *podREST) List(ctx context.Context, _ *metainternalversion.ListOptions) (runtime.Object, error) {
	nodes := &virtkit.NodeList{}
	if err := r.st.List(ctx, nodes, store.ListOptions{}); err != nil {
		return nil, apiError(err, r.groupResource(), "")
	}
	return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: nodes.ResourceVersion}, Items: []corev1.Pod{}}, nil
}

// Watch implements rest.Watcher: a watch that reports nothing (but the end
// of the initial events when asked for) until it is stopped.
func (r *podREST) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	l, err := r.List(ctx, nil)
	if err != nil {
		return nil, err
	}
	rv := l.(*corev1.PodList).ResourceVersion
	ctx, cancel := context.WithCancel(ctx)
	w := &viewWatch{ch: make(chan watch.Event), cancel: cancel}
	bookmark := options != nil && options.SendInitialEvents != nil && *options.SendInitialEvents && options.AllowWatchBookmarks
	go func() {
		defer close(w.ch)
		defer w.Stop()
		if bookmark {
			b := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv, Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
			if !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: b}) {
				return
			}
		}
		<-ctx.Done()
	}()
	return w, nil
}

var _ rest.Watcher = (*podREST)(nil)
