package virtkit

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is any virtkit API object: Kubernetes-style metadata plus deep
// copying. Every kind in this package implements it, and so does a caller's
// own kind registered with a store.
//
// +kubebuilder:object:generate=false
type Object interface {
	metav1.Object
	runtime.Object
}

// ObjectList is a list of one kind (VirtualMachineList, ...).
//
// +kubebuilder:object:generate=false
type ObjectList interface {
	metav1.ListInterface
	runtime.Object
}
