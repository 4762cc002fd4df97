package admission

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/virtkit/virtkit"
)

// Operation is the kind of write being admitted.
type Operation string

// The operations a step can handle.
const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
	Delete Operation = "DELETE"
)

// UserInfo is who asked for the write.
type UserInfo struct {
	Name   string
	Groups []string
}

// Attributes describe one write for the steps of a [Chain]: Object is the
// object being written (mutating steps change it in place), OldObject the
// stored one on an update or delete.
type Attributes struct {
	Operation   Operation
	Kind        schema.GroupVersionKind
	Namespace   string
	Name        string
	Subresource string
	Object      virtkit.Object
	OldObject   virtkit.Object
	User        UserInfo
	DryRun      bool
}

// AttributesFor describes op on obj (old: the stored object, nil on a
// create), taking kind, namespace and name from obj.
func AttributesFor(op Operation, obj, old virtkit.Object) Attributes {
	gvk, _ := virtkit.GVKOf(obj)
	return Attributes{Operation: op, Kind: gvk, Namespace: obj.GetNamespace(), Name: obj.GetName(),
		Object: obj, OldObject: old}
}
