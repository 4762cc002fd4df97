// Package store keeps virtkit objects with the semantics of the Kubernetes
// API server, so reconcilers written against it behave as they would against
// KubeVirt: optimistic concurrency, generations, a status subresource,
// graceful deletion with finalizers and resumable, level-triggered watches.
//
// # The contract
//
// [Store] is the port every component uses. Objects are identified by their
// Go type (the kind) and [Key] (namespace, name). Each write gets a new
// resourceVersion, a decimal uint64 that increases across the whole store.
// Writes carry the resourceVersion they were based on; a stale one fails
// with [ErrConflict], so concurrent writers cannot lose each other's
// updates. Update writes spec and metadata, UpdateStatus only status; the
// generation moves only when the spec changes. Delete of an object with
// finalizers sets deletionTimestamp; the object disappears when the last
// finalizer is removed by an Update. DeleteOptions.PropagationPolicy adds
// Kubernetes' orphan or foregroundDeletion finalizer, which a garbage
// collector (controller.GarbageCollector) removes once the dependents are
// orphaned or deleted.
//
// Watch delivers Added/Modified/Deleted events after a resourceVersion
// (typically a List's), so List+Watch never misses a change. Writers never
// wait for watchers: a watcher that falls behind, or asks for a version the
// store has forgotten, gets [ErrExpired] and must relist. The conformance
// suite in package storetest pins all of this down for every implementation.
//
// # Corrupt values
//
// A backend shared with other tools can hold bytes that are not a valid
// object for their key. Such a value costs only itself: List and Watch skip
// it (and go on), Get, Update and Delete of its key fail with a
// [*CorruptError] wrapping [ErrCorrupt] that names the backend key to
// repair, and stores that can meet one implement [CorruptReporter] so the
// process can export them. [Scheme.DecodeStored] is the check every backend
// applies to what it reads.
//
// # Kinds
//
// A store knows the kinds registered with it ([Kind], [Scheme]). Zero
// [Options] give virtkit's kinds ([DefaultKinds]); callers add their own
// types, which need only embedded TypeMeta/ObjectMeta, DeepCopyObject and
// optionally a Status field. [Scheme] also holds the metadata rules shared by
// implementations (PrepareCreate, PrepareUpdate, ...), so that a new backend
// behaves exactly like the memory store.
//
// # Metadata and status in one write
//
// Update writes spec and metadata, UpdateStatus the status: two revisions
// and two watch events. Stores that can write both at once implement
// [StatusWriter] (the memory and etcd stores do); [UpdateWithStatus] uses
// it when present and falls back to the two calls otherwise, so a
// controller's hand-off (a finalizer with the first status, a node label
// with the placement) costs one write where the store allows it.
//
// # Uids and generated names
//
// A store draws the uid of every object it creates and the suffix of a
// name from metadata.generateName from [IDs]: [RandomIDs] by default,
// [SeededIDs] (Options.IDs) for runs that must repeat, where the n-th
// object at a key and the n-th name from a base get the same values
// whatever else was written in between.
//
// # Raw writes
//
// A caller that applies the Kubernetes metadata rules itself (a generic
// Kubernetes API server, through package apiserver/kubestorage) writes
// through [Raw] instead: create, replace and delete as compare-and-swaps
// on resourceVersion, with none of Store's rules, plus a list at an
// earlier resourceVersion for consistent pagination. Raw writes are
// ordinary writes for Get, List and Watch. The memory and etcd stores
// implement it (storetest.RunRaw checks them).
//
// # Implementations
//
// [NewMemory] is the embedded default: one process, no dependencies, a
// bounded event history. Package store/etcd implements the same contract on
// etcd v3 for control planes spanning hosts.
package store
