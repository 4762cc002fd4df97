// Package virtkit is the object model of virtkit: KubeVirt's kinds with
// KubeVirt's JSON names, enum strings, defaults and validation.
//
// +kubebuilder:object:generate=true
package virtkit
