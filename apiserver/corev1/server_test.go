package corev1_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"

	"github.com/virtkit/virtkit"
	apicorev1 "github.com/virtkit/virtkit/apiserver/corev1"
	"github.com/virtkit/virtkit/apiserver/kubestorage"
	"github.com/virtkit/virtkit/apiserver/openapi"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/store"
)

// testServer is a generic API server serving the core v1 group over a
// memory store, with the NamespaceLifecycle admission plugin.
type testServer struct {
	client kubernetes.Interface
	config *restclient.Config
	store  *store.Memory
	ns     *controller.NamespaceReconciler
	// http serves the API; closing its client connections ends the
	// clients' watches, which resume from their last resourceVersion.
	http *httptest.Server
}

func newTestServer(t *testing.T) *testServer {
	t.Helper()
	ctx := t.Context()
	st, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1})
	require.NoError(t, err)
	require.NoError(t, controller.EnsureNamespaces(ctx, st, virtkit.SystemNamespaces()...))

	var handler atomic.Pointer[http.Handler]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	loopback := &restclient.Config{Host: srv.URL, QPS: -1}
	client, err := kubernetes.NewForConfig(loopback)
	require.NoError(t, err)

	scheme, err := apicorev1.NewScheme()
	require.NoError(t, err)
	codecs := serializer.NewCodecFactory(scheme)
	cfg := genericapiserver.NewConfig(codecs)
	cfg.LoopbackClientConfig = loopback
	cfg.ExternalAddress = srv.Listener.Addr().String()
	cfg.EffectiveVersion = basecompatibility.NewEffectiveVersionFromString("", "", "")
	cfg.OpenAPIConfig, cfg.OpenAPIV3Config = openapi.Config(scheme)
	factory := informers.NewSharedInformerFactory(client, 0)
	plugin, err := lifecycle.NewLifecycle(sets.New[string]("default", "kube-system", "kube-public"))
	require.NoError(t, err)
	plugin.SetExternalKubeClientSet(client)
	plugin.SetExternalKubeInformerFactory(factory)
	require.NoError(t, plugin.ValidateInitialization())
	cfg.AdmissionControl = plugin

	s, err := cfg.Complete(factory).New("test", genericapiserver.NewEmptyDelegate())
	require.NoError(t, err)
	info, err := apicorev1.NewAPIGroupInfo(apicorev1.Options{
		RESTOptions: kubestorage.RESTOptionsGetter(st, kubestorage.Options{Codec: codecs.LegacyCodec(apicorev1.GroupVersion)}),
		Store:       st,
	})
	require.NoError(t, err)
	require.NoError(t, s.InstallLegacyAPIGroup("/api", &info))
	h := http.Handler(s.Handler)
	handler.Store(&h)

	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); factory.Shutdown() })
	factory.Start(stop)
	for typ, ok := range factory.WaitForCacheSync(stop) {
		require.True(t, ok, "informer of %v synced", typ)
	}
	nsc, err := controller.NewNamespaceReconciler(controller.ReconcilerOptions{Store: st})
	require.NoError(t, err)
	return &testServer{client: client, config: loopback, store: st, ns: nsc, http: srv}
}
