// Package kube is what the virtkit CLI's verbs need of a connection to
// the API: resolving what a user typed (vm, vms, virtualmachines.kubevirt.io)
// through the server's discovery, the dynamic client of a resource, raw
// requests whose error replies keep the server's status, kubectl's names
// for objects in messages, and [Store], a store.Store over the API for the
// verbs that run library code written against a store (drain, cordon,
// uncordon).
package kube
