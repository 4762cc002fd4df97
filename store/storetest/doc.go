// Package storetest is the conformance suite every store.Store must pass.
//
// Run exercises each contract point of store.Store: metadata set by Create,
// optimistic concurrency under concurrent writers, generation bumped only by
// spec changes, the status subresource, graceful deletion with finalizers,
// namespaces, cluster-scoped kinds, label selectors, deep-copy isolation and
// watches (ordering, filters, initial events, resume, expiry, cancel).
//
// RunCorrupt is for stores whose backend can hold values the store did not
// write (etcd): a value that is not a valid object for its key costs only
// itself. The memory store builds every value it holds and has no import
// path, so it cannot hold a corrupt value and does not run RunCorrupt.
//
// It uses its own kinds (Widget, namespaced; Gadget, cluster-scoped) so it
// also proves a store works for kinds other than virtkit's: the store under
// test must register Kinds().
//
//	func TestMemory(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := store.NewMemoryWithOptions(store.Options{Kinds: storetest.Kinds()})
//			require.NoError(t, err)
//			return s
//		})
//	}
package storetest
