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
// runs unchanged against both. The store also implements store.Raw (raw
// compare-and-swap writes and lists at a past revision, a range read at
// that revision) for a generic Kubernetes API server sharing its data.
//
// # Watches and lists with a label selector
//
// etcd cannot filter by label, so every watcher of a kind receives every
// write. A watch or List with a label selector looks in each value's bytes
// for the quoted values of the selector's equality terms before decoding
// it: a value without them cannot match and is skipped undecoded (a node
// agent decodes its own VMIs, not the fleet's). Such a watch asks etcd for
// no previous values; it remembers the objects it reported as matching
// (seeded by a read at the revision it starts from), which tells it when
// one stops matching (Deleted) or goes away. A value that cannot match and
// was not reported is never decoded, so a List with a selector does not
// find corrupt values of objects it would not return.
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
// # Corrupt values
//
// Anything with etcd access can write under the prefix. A value that is not
// a valid object for its key (undecodable JSON, another kind or apiVersion,
// a name or namespace other than the key's, a malformed key, more than
// Options.MaxObjectBytes) is skipped by List and Watch, refused by Get,
// Update and Delete with a *store.CorruptError naming the etcd key, logged
// once per value as a warning and passed to Options.OnCorrupt. A watcher
// that had the object before it was overwritten gets Deleted; a valid
// rewrite is Added again. CorruptObjects lists the corrupt values not yet
// seen repaired; package metrics exports them. Repair with etcdctl: put a
// valid object, or delete the key.
//
// Tests start a real embedded etcd server with package etcdtest.
package etcd
