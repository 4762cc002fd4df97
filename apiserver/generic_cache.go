package apiserver

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// watchCacheGetter gives every resource of another RESTOptionsGetter the
// library's watch cache in front of its storage, as kube-apiserver caches
// its resources: watches are served from the cache, which sends them
// periodic bookmarks (about once a minute) when they ask for them.
type watchCacheGetter struct {
	generic.RESTOptionsGetter
	clock clock.WithTicker
}

func (g watchCacheGetter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil {
		return opts, err
	}
	opts.Decorator = withWatchCache(opts.Decorator, g.clock)
	return opts, nil
}

// withWatchCache puts the library's cacher in front of the storage inner
// builds.
func withWatchCache(inner generic.StorageDecorator, clk clock.WithTicker) generic.StorageDecorator {
	return func(cfg *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, getAttrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := inner(cfg, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrs, triggers, indexers)
		if err != nil {
			return nil, nil, err
		}
		cacher, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
			Storage: s, Versioner: storage.APIObjectVersioner{}, GroupResource: cfg.GroupResource,
			EventsHistoryWindow: cfg.EventsHistoryWindow, ResourcePrefix: resourcePrefix, KeyFunc: keyFunc,
			NewFunc: newFunc, NewListFunc: newListFunc, GetAttrsFunc: getAttrs, IndexerFuncs: triggers,
			Indexers: indexers, Codec: cfg.Codec, Clock: clk,
		})
		if err != nil {
			destroy()
			return nil, nil, err
		}
		delegator := cacherstorage.NewCacheDelegator(cacher, s)
		var once sync.Once
		return delegator, func() {
			once.Do(func() {
				delegator.Stop()
				cacher.Stop()
				destroy()
			})
		}, nil
	}
}
