package kubestorage

import (
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// Decorator returns a generic.StorageDecorator that gives each resource a
// Storage over backend: the kind is the one registered for newFunc's Go
// type, the keys are those registry.Store builds under resourcePrefix.
// The config is not used (the backend is already configured); the
// DestroyFunc does nothing (the backend belongs to the caller).
func Decorator(backend Backend) generic.StorageDecorator {
	return func(_ *storagebackend.ConfigForResource, resourcePrefix string, _ func(runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, _ storage.AttrFunc, _ storage.IndexerFuncs, _ *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		s, err := New(backend, resourcePrefix, newFunc, newListFunc)
		if err != nil {
			return nil, nil, err
		}
		return s, func() {}, nil
	}
}

// Options configures RESTOptionsGetter. The zero value is usable.
type Options struct {
	// Codec is what registry.Store copies objects with for dry-run
	// requests (DryRunnableStorage); typically the server's
	// CodecFactory.LegacyCodec(...). Nil is a plain JSON codec, enough
	// for virtkit's types.
	Codec runtime.Codec
	// EnableGarbageCollection and DeleteCollectionWorkers are passed on
	// in every RESTOptions.
	EnableGarbageCollection bool
	DeleteCollectionWorkers int
}

// RESTOptionsGetter returns the generic.RESTOptionsGetter to give every
// registry.Store of the server (its CompleteWithOptions): storage over
// backend through Decorator, with ResourcePrefix "/<group>/<resource>"
// ("/<resource>" for the core group).
func RESTOptionsGetter(backend Backend, opts Options) generic.RESTOptionsGetter {
	if opts.Codec == nil {
		opts.Codec = jsonCodec{}
	}
	return restOptionsGetter{backend: backend, opts: opts}
}

type restOptionsGetter struct {
	backend Backend
	opts    Options
}

// GetRESTOptions implements generic.RESTOptionsGetter.
func (g restOptionsGetter) GetRESTOptions(resource schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	if resource.Resource == "" {
		return generic.RESTOptions{}, fmt.Errorf("resource: %w: empty", ErrBackend)
	}
	cfg := storagebackend.NewDefaultConfig("", g.opts.Codec).ForResource(resource)
	return generic.RESTOptions{
		StorageConfig:           cfg,
		Decorator:               Decorator(g.backend),
		EnableGarbageCollection: g.opts.EnableGarbageCollection,
		DeleteCollectionWorkers: g.opts.DeleteCollectionWorkers,
		ResourcePrefix:          ResourcePrefix(resource),
	}, nil
}

// ResourcePrefix is the resource prefix RESTOptionsGetter gives a
// resource: "/<group>/<resource>", or "/<resource>" for the core group.
func ResourcePrefix(resource schema.GroupResource) string {
	if resource.Group == "" {
		return "/" + resource.Resource
	}
	return "/" + resource.Group + "/" + resource.Resource
}

// jsonCodec copies objects through encoding/json: what dry-run requests
// need when the server gives no codec.
type jsonCodec struct{}

func (jsonCodec) Encode(obj runtime.Object, w io.Writer) error { return json.NewEncoder(w).Encode(obj) }

func (jsonCodec) Identifier() runtime.Identifier { return "kubestorage-json" }

func (jsonCodec) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into == nil {
		return nil, nil, fmt.Errorf("decode: %w: the JSON codec needs an object to decode into", ErrBackend)
	}
	if err := runtime.SetZeroValue(into); err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal(data, into); err != nil {
		return nil, nil, fmt.Errorf("decode %T: %w", into, err)
	}
	gvk := into.GetObjectKind().GroupVersionKind()
	return into, &gvk, nil
}
