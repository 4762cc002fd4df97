// Package kubestorage lets a Kubernetes generic API server
// (k8s.io/apiserver, one registry.Store per resource) keep its objects in a
// virtkit store, the same store virtkit's controllers and node agents use
// through store.Store: both sides read, write and watch the same data, with
// the same uids and resourceVersions.
//
// # Plugging it in
//
// Give every registry.Store the options of [RESTOptionsGetter]:
//
//	getter := kubestorage.RESTOptionsGetter(st, kubestorage.Options{Codec: codecs.LegacyCodec(gv)})
//	err := vmStore.CompleteWithOptions(&generic.StoreOptions{RESTOptions: getter})
//
// or use [Decorator] as the StorageDecorator of RESTOptions built
// elsewhere, or [New] for one resource. The backend is a store
// implementing [Backend]: *store.Memory (create it with
// store.Options.StartResourceVersion of 1 or more: Kubernetes reads
// resourceVersion 0 as "any") or *etcd.Store.
//
// # Kinds and keys
//
// The storage of a resource serves the store kind registered for the Go
// type its registry.Store's NewFunc returns (store.Options.Kinds adds
// kinds to a store). Keys are those registry.Store's default key
// functions build: "<prefix>/<namespace>/<name>", or "<prefix>/<name>"
// for a cluster-scoped kind. [RESTOptionsGetter] uses the prefix
// "/<group>/<resource>" ([ResourcePrefix]); the prefix only names the
// resource in keys and continue tokens: in the store, objects live by
// kind, namespace and name whatever the prefix (for etcd at
// <Prefix>/<Kind>/<namespace>/<name>).
//
// # Semantics
//
// registry.Store applies Kubernetes' metadata rules itself (uid,
// generation, creationTimestamp, graceful deletion, finalizers), so the
// storage writes through [store.Raw], which applies none of
// store.Store's: writes are compare-and-swaps on resourceVersion. Reads
// and watches use store.Store, so Raw writes reach every store watcher,
// and the store's writes reach the API server's watchers.
//
// Lists are read at the store's current version, or, for a continue
// token or an Exact resourceVersion match, at the version named (a
// paginated list is consistent; a version older than the store's history
// is 410 Gone, with a token to continue inconsistently). A list or get
// at a version newer than the store is "too large resource version".
// Watches follow the etcd3 storage: "" and "0" start with the current
// objects as Added events, a version delivers every change after it,
// sendInitialEvents with allowWatchBookmarks ends the initial events with
// a bookmark annotated k8s.io/initial-events-end. Field selectors are
// applied by the storage, label selectors by the store.
//
// Not supported: objects with a time to live (Create with a ttl fails),
// progress notifications, estimated object sizes, and unsafe deletion of
// corrupt objects (the store reports those; repair them in the backend).
//
// # Conformance
//
// The storage runs the conformance suites of
// k8s.io/apiserver/pkg/storage/testing (v0.37.2) against the memory and
// the etcd store (conformance_test.go): of 59 suites, 37 pass on etcd and
// 36 on memory; the others are skipped, each with its reason, because
// they test what these stores do not have:
//
//   - a value transformer (encryption at rest) between storage and
//     backend: 8 suites (GuaranteedUpdate and ListResourceVersionMatch
//     among them, as they use it to inject their cases);
//   - objects with a time to live: 2;
//   - corrupt values and their unsafe deletion: 4 (the stores report
//     corrupt values; repair them in the backend);
//   - free-form keys, objects stored at keys their metadata does not name
//     or renamed by an update: 4 (a store keys every object by namespace
//     and name, as registry.Store does);
//   - one resource holding both namespaced and cluster-scoped keys: 1;
//   - progress notifications, object size estimates, the observed
//     compaction revision: 1 each;
//   - on memory only, List, which compacts history up to a version (the
//     memory store can only drop its whole history).
package kubestorage
