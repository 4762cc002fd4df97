// Package kube is what the virtkit CLI's verbs need of a connection to
// the API: resolving what a user typed (vm, vms, virtualmachines.kubevirt.io)
// through the server's discovery, the dynamic client of a resource, raw
// requests whose error replies keep the server's status, and kubectl's
// names for objects in messages.
package kube
