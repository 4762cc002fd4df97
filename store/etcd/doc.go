// Package etcd implements store.Store on etcd v3, for control planes whose
// controllers and node agents run on several hosts.
//
// Objects are stored as JSON at <prefix>/<Kind>/<namespace>/<name>
// (cluster-scoped kinds: <prefix>/<Kind>/<name>). An object's
// resourceVersion is the etcd mod revision of its key, so versions increase
// across the whole etcd keyspace and a List's version (the read revision)
// is a valid starting point for a Watch. Every write is a transaction
// conditioned on the mod revision that was read (create: on the key not
// existing), which gives the optimistic concurrency of store.Store without
// locks. The metadata rules (generation, status subresource, finalizers) are
// store.Scheme's, the same as the memory store's; package storetest's suite
// runs unchanged against both.
//
// # Compaction
//
// etcd forgets old revisions when it compacts. A Watch from a compacted
// revision fails with an error wrapping store.ErrExpired; a running watch
// that etcd cancels because of compaction delivers an Error event wrapping
// store.ErrExpired (and rpctypes.ErrCompacted) and closes. A watcher whose
// consumer falls WatchBuffer events behind gets the same. In every case the
// caller relists and watches again from the list's resourceVersion, which
// loses no change: a reconciler sees the current state of every object.
//
// Tests start a real embedded etcd server with package etcdtest.
package etcd
