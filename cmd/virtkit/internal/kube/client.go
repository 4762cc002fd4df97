package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Client is a connection to the API.
type Client struct {
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	// Discovery is the server's discovery, cached for the client's life.
	Discovery discovery.CachedDiscoveryInterface
	// REST is the raw client (Tables, watches of Tables, subresources); it
	// decodes the server's errors as metav1.Status.
	REST rest.Interface
	// Namespace is the kubeconfig context's namespace, or -n's.
	Namespace string
}

// NewClient builds the clients of the API cfg reaches (a kubeconfig's, or
// the in-process server's), in namespace ns by default.
func NewClient(cfg *rest.Config, ns string) (*Client, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(disc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	// The raw client (Tables, watches of Tables, subresources) decodes the
	// server's errors as metav1.Status, so they keep reason and message.
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	rcfg := rest.CopyConfig(cfg)
	rcfg.GroupVersion = &schema.GroupVersion{Version: "v1"}
	rcfg.APIPath = "/"
	rcfg.ContentType = "application/json"
	rcfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	rc, err := rest.RESTClientFor(rcfg)
	if err != nil {
		return nil, err
	}
	return &Client{Dynamic: dyn, Mapper: mapper, Discovery: cached, REST: rc, Namespace: ns}, nil
}

// cliAliases are names virtkit's CLI has always accepted besides the
// server's resource, singular and short names; a name the server knows
// wins (a server that serves apps/v1 ReplicaSets keeps "replicasets").
var cliAliases = map[string]schema.GroupResource{
	"migrations":  {Group: "kubevirt.io", Resource: "virtualmachineinstancemigrations"},
	"migration":   {Group: "kubevirt.io", Resource: "virtualmachineinstancemigrations"},
	"replicasets": {Group: "kubevirt.io", Resource: "virtualmachineinstancereplicasets"},
	"replicaset":  {Group: "kubevirt.io", Resource: "virtualmachineinstancereplicasets"},
	"rs":          {Group: "kubevirt.io", Resource: "virtualmachineinstancereplicasets"},
}

// Mapping resolves what the user typed (vm, vms, virtualmachines,
// virtualmachines.kubevirt.io) through the server's discovery.
func (c *Client) Mapping(typed string) (*meta.RESTMapping, error) {
	gvr, gr := schema.ParseResourceArg(strings.ToLower(typed))
	var in schema.GroupVersionResource
	if gvr != nil {
		in = *gvr
	} else {
		in = gr.WithVersion("")
	}
	full, err := c.Mapper.ResourceFor(in)
	if alias, ok := cliAliases[in.Resource]; ok && in.Group == "" && meta.IsNoMatchError(err) {
		full, err = c.Mapper.ResourceFor(alias.WithVersion(""))
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("the server doesn't have a resource type %q", typed)
		}
		return nil, err
	}
	gvk, err := c.Mapper.KindFor(full)
	if err != nil {
		return nil, err
	}
	return c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
}

// ResourceFor is the dynamic client of a mapping in namespace (ignored for
// cluster-scoped kinds; "" lists every namespace).
func (c *Client) ResourceFor(m *meta.RESTMapping, namespace string) dynamic.ResourceInterface {
	r := c.Dynamic.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace && namespace != "" {
		return r.Namespace(namespace)
	}
	return r
}

// ResourcePath is the REST path of a resource (and object).
func ResourcePath(m *meta.RESTMapping, ns, name string) string {
	gv := m.Resource.GroupVersion()
	p := "/apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		p = "/api/" + gv.Version
	}
	if ns != "" && m.Scope.Name() == meta.RESTScopeNameNamespace {
		p += "/namespaces/" + ns
	}
	p += "/" + m.Resource.Resource
	if name != "" {
		p += "/" + name
	}
	return p
}

// KindRef is how kubectl names an object in its messages:
// virtualmachine.kubevirt.io/NAME, or kind/NAME for the core group.
func KindRef(gk schema.GroupKind) string {
	k := strings.ToLower(gk.Kind)
	if gk.Group == "" {
		return k
	}
	return k + "." + gk.Group
}

// DoRaw runs a raw request and returns its body; an error reply that
// carries a metav1.Status comes back as that status, whatever content type
// the server labelled it with.
func DoRaw(ctx context.Context, req *rest.Request) ([]byte, error) {
	raw, err := req.Do(ctx).Raw()
	if err == nil {
		return raw, nil
	}
	var st metav1.Status
	if len(raw) > 0 && json.Unmarshal(raw, &st) == nil && st.Kind == "Status" && st.Reason != "" {
		return nil, &apierrors.StatusError{ErrStatus: st}
	}
	return nil, err
}

// NamespaceOf is where an object goes: its own namespace, else the
// command's (for namespaced kinds).
func NamespaceOf(m *meta.RESTMapping, u *unstructured.Unstructured, fallback string) string {
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return ""
	}
	if ns := u.GetNamespace(); ns != "" {
		return ns
	}
	return fallback
}
