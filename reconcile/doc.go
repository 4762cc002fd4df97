// Package reconcile is virtkit's framework for level-triggered
// reconcilers: the Reconciler contract, a runner with a rate-limited work
// queue, and a shared cache of the store. The built-in reconcilers
// (package controller) and the node agents (package node) both run on it;
// it knows nothing of either.
//
// # Reconcilers and the runner
//
// A [Reconciler] gets only a key ([Request]) and reads everything else from
// the store, so missing or duplicate events never matter. Its error is the
// contract: nil means done, an error means retry with per-key exponential
// backoff, and an error wrapped by [TerminalError] means "record it and do
// not retry" (the runner calls Options.OnTerminalError). Result.RequeueAfter
// asks for another look after a delay.
//
// [Controller] feeds one Reconciler from store watches of any number of
// kinds; a [MapFunc] turns a changed object into requests (the object
// itself, or its controller owner via [ControllerOwner]). The runner lists,
// then watches from the list's resourceVersion, relists when the store
// answers store.ErrExpired, and re-lists everything every ResyncPeriod.
// Requests go through client-go's rate-limited work queue, which
// de-duplicates keys and never hands out a key that is being reconciled:
// at most one Reconcile per object runs at a time, and
// MaxConcurrentReconciles workers run different objects in parallel.
// [Controller.Start] blocks until its context ends; there is no manager and
// no global state. [Controller.Stats] returns queue and reconcile numbers
// for the metrics package.
//
// # The shared cache
//
// A process running several controllers gives them one [SharedCache] as
// their source: it lists and watches each kind of the store once, keeps
// the objects in a client-go indexer (by namespace, node, controller owner
// and label) and serves the controllers' lists and watches from there, so
// N controllers watching VMIs cost one store watch (and, on etcd, one
// decoding of each event). Reconcilers may read from it what they
// do not modify, without copies, and put their own writes into it at once
// ([SharedCache.Assume]) so the next reconcile does not act on the state
// before them. Writes always go to the store.
package reconcile
