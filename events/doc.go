// Package events records Kubernetes-style Event objects (events.k8s.io/v1,
// [virtkit.Event]) in a [store.Store] and keeps them for a bounded time.
//
// A [Recorder] writes one Event per distinct occurrence: the same regarding
// object, type, reason, action, note and reporter seen again within
// Options.Window updates the existing Event's series (count and last
// observation) instead of creating another, as client-go's event recorder
// does. Writes per regarding object are bounded by a token bucket (a burst,
// then one write per refill period); occurrences that arrive without a token
// are still counted and land in the next write of their series.
//
// A write the store failed to carry out (unreachable, timed out, a caller
// that gave up) is retried off the caller's goroutine while
// [Recorder.Start] runs, as client-go's event broadcaster does: up to
// Options.MaxRetries more tries (11), Options.RetryInterval apart (10
// seconds) on Options.Clock, at most Options.MaxPending writes waiting
// (1000, the oldest given up first). A retry writes its series' latest
// count, so an event recorded during a short store outage still lands,
// once. A write the store rejects (a store sentinel error) is not
// retried. Unlike client-go the first retry is not jittered, so a virtual
// clock replays it at the same instant every time. Stats counts retries
// and what was given up.
//
// A [Collector] deletes events whose last observation is older than its
// TTL (one hour by default, like kube-apiserver's --event-ttl). It works
// on every store, memory or etcd.
//
// The built-in controllers and node agents take a recorder through their
// options ([EventRecorder], a one-method interface that *Recorder
// implements); nil records nothing. The cluster package wires a store-backed
// recorder and a collector by default.
//
// [WatchChanges] in the store package is the complement for audit trails:
// it hands a consumer the old and new state of every change, where events
// are a summary meant for people.
package events
