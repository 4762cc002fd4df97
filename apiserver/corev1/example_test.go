package corev1_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"

	apicorev1 "github.com/virtkit/virtkit/apiserver/corev1"
	"github.com/virtkit/virtkit/apiserver/kubestorage"
	"github.com/virtkit/virtkit/apiserver/openapi"
	"github.com/virtkit/virtkit/store"
)

// A generic API server serving the core group over a virtkit store, used
// through client-go.
func Example() {
	st, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1})
	if err != nil {
		panic(err)
	}
	scheme, err := apicorev1.NewScheme()
	if err != nil {
		panic(err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	cfg := genericapiserver.NewConfig(codecs)
	cfg.EffectiveVersion = basecompatibility.NewEffectiveVersionFromString("", "", "")
	cfg.OpenAPIConfig, cfg.OpenAPIV3Config = openapi.Config(scheme)
	cfg.ExternalAddress = "127.0.0.1:443"
	cfg.LoopbackClientConfig = &restclient.Config{}
	s, err := cfg.Complete(nil).New("example", genericapiserver.NewEmptyDelegate())
	if err != nil {
		panic(err)
	}
	info, err := apicorev1.NewAPIGroupInfo(apicorev1.Options{
		RESTOptions: kubestorage.RESTOptionsGetter(st, kubestorage.Options{Codec: codecs.LegacyCodec(apicorev1.GroupVersion)}),
		Store:       st,
	})
	if err != nil {
		panic(err)
	}
	if err := s.InstallLegacyAPIGroup("/api", &info); err != nil {
		panic(err)
	}
	srv := httptest.NewServer(s.Handler)
	defer srv.Close()

	client := kubernetes.NewForConfigOrDie(&restclient.Config{Host: srv.URL})
	ctx := context.Background()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(ns.Name, ns.Status.Phase, ns.Spec.Finalizers)
	_, err = client.CoreV1().ConfigMaps("team").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Data: map[string]string{"no spaces": "x"},
	}, metav1.CreateOptions{})
	fmt.Println(err)
	// Output:
	// team Active [kubernetes]
	// ConfigMap "bad" is invalid: data[no spaces]: Invalid value: "no spaces": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')
}
