package apiserver

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
)

// admitStatus is the admission of a status write by u: next is the stored
// object cur with the status the client wrote (spec and metadata stay as
// stored). A node agent writes only the status of VMIs it holds a domain
// of and of its own Node (Kubernetes' NodeRestriction); on a VMI,
// placement belongs to the control plane (admitVMIPlacement).
func admitStatus(k *genericKind, u *User, next, cur virtkit.Object) error {
	if u == nil {
		u = &User{}
	}
	if node, ok := u.NodeName(); ok && !u.IsControlPlane() {
		if err := admitNodeWrite(k, node, cur); err != nil {
			return err
		}
	}
	if vmi, ok := next.(*virtkit.VirtualMachineInstance); ok {
		if errs := admitVMIPlacement(u, vmi, cur.(*virtkit.VirtualMachineInstance)); len(errs) > 0 {
			return apierrors.NewInvalid(k.gvk.GroupKind(), cur.GetName(), errs)
		}
	}
	return nil
}

// admitNodeWrite refuses node's status write of an object that is not
// its: a VMI is node's while its status.nodeName or its migration's source
// or target node names node; a Node only if it is node.
func admitNodeWrite(k *genericKind, node string, cur virtkit.Object) error {
	var why string
	switch o := cur.(type) {
	case *virtkit.VirtualMachineInstance:
		ms := o.Status.MigrationState
		if o.Status.NodeName == node || ms != nil && ms.MigrationUID != "" && (ms.TargetNode == node || ms.SourceNode == node) {
			return nil
		}
		placed := "is not placed"
		if o.Status.NodeName != "" {
			placed = fmt.Sprintf("runs on node %q", o.Status.NodeName)
		}
		why = fmt.Sprintf("node %q may write the status of the VMIs placed on it or migrating to or from it only; this one %s", node, placed)
	case *virtkit.Node:
		if o.Name == node {
			return nil
		}
		why = fmt.Sprintf("node %q may write the status of its own Node only", node)
	default:
		return nil // the authorizer decides
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: k.gvk.Group, Resource: k.plural}, cur.GetName(), fmt.Errorf("%s", why))
}

// admitVMIPlacement keeps a VMI's placement the control plane's:
// status.nodeName is set by the scheduler (ControlPlaneGroup) when it is
// empty, and changes afterwards only in a migration's handover to the
// migration's target node, written by the control plane or by that node's
// agent; the migration's routing (status.migrationState's migrationUid,
// sourceNode and targetNode) is the control plane's alone.
func admitVMIPlacement(u *User, next, cur *virtkit.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("status")
	cp := u.IsControlPlane()
	node, isNode := u.NodeName()
	was, now := cur.Status.NodeName, next.Status.NodeName
	switch {
	case was == now:
	case was == "" && cp:
	case handover(next, cur) && (cp || isNode && node == now):
	case was == "":
		errs = append(errs, field.Forbidden(p.Child("nodeName"),
			"only the scheduler (virtkit's control plane) places a VMI"))
	default:
		errs = append(errs, field.Forbidden(p.Child("nodeName"), fmt.Sprintf(
			"the VMI is placed on node %q: it moves only by a live migration, whose handover to the target node the control plane writes", was)))
	}
	if cp {
		return errs
	}
	var o, n virtkit.VirtualMachineInstanceMigrationState
	if cur.Status.MigrationState != nil {
		o = *cur.Status.MigrationState
	}
	if next.Status.MigrationState != nil {
		n = *next.Status.MigrationState
	}
	ms := p.Child("migrationState")
	for _, f := range []struct {
		name     string
		was, now string
	}{
		{"migrationUid", string(o.MigrationUID), string(n.MigrationUID)},
		{"sourceNode", o.SourceNode, n.SourceNode},
		{"targetNode", o.TargetNode, n.TargetNode},
	} {
		if f.was != f.now {
			errs = append(errs, field.Forbidden(ms.Child(f.name), "set by the control plane only: it routes the migration"))
		}
	}
	return errs
}

// handover reports whether next moves the VMI to the target node of the
// migration cur records, once that migration has ended and not failed.
func handover(next, cur *virtkit.VirtualMachineInstance) bool {
	o, n := cur.Status.MigrationState, next.Status.MigrationState
	return o != nil && n != nil && o.MigrationUID != "" && n.MigrationUID == o.MigrationUID &&
		o.TargetNode != "" && o.TargetNode == next.Status.NodeName &&
		n.EndTimestamp != nil && !n.Failed
}
